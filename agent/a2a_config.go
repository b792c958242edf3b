package agent

import "fmt"

// A2AConfig configures how this agent reaches peers over A2A when a
// contract selects the a2a_jsonrpc transport (package
// transport/a2aclient): the bearer token each peer's /a2a endpoint takes.
type A2AConfig struct {
	// Peers are the peers this agent holds an A2A token for.
	Peers []A2APeerConfig `json:"peers,omitempty"`
}

// A2APeerConfig is the token for one peer's A2A endpoint (a token that
// peer issued to this agent, with the tasks:write scope).
type A2APeerConfig struct {
	AgentID string `json:"agent_id"`
	// TokenEnv names the environment variable holding the token.
	TokenEnv string `json:"token_env"`
	// Token is read from TokenEnv at start; never from the file.
	Token string `json:"-"`
}

// TokenFor is the token for peer's A2A endpoint, "" without one.
func (c *A2AConfig) TokenFor(peer string) string {
	for _, p := range c.Peers {
		if p.AgentID == peer {
			return p.Token
		}
	}
	return ""
}

func (c *A2AConfig) check(bad func(field, format string, args ...any)) {
	for i, p := range c.Peers {
		f := fmt.Sprintf("a2a.peers[%d]", i)
		switch {
		case p.AgentID == "":
			bad(f+".agent_id", "must not be empty")
		case p.TokenEnv == "":
			bad(f+".token_env", "must name an environment variable")
		case p.Token == "":
			bad(f+".token_env", "%s must be set and not empty", p.TokenEnv)
		}
	}
}
