package wire

// APIPrefix is the path prefix of every route of the Synapse REST API
// (SPEC §5.2): the server's routes, the Go client's requests, and the
// agents' requests to each other all start with it.
const APIPrefix = "/api/v1/synapse"
