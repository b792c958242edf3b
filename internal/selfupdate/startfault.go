//go:build synapse_startfault

package selfupdate

// The tests' release that crashes at each start: built with -tags
// synapse_startfault, it exits 3 right after its trial start is counted.
func init() { startFault = true }
