package a2aclient

import (
	"errors"
	"fmt"
)

// Config is the "a2a" section of the config file: the bearer token each
// peer's A2A endpoint takes, for the contracts that select the
// a2a_jsonrpc transport.
type Config struct {
	// Peers are the peers this agent holds an A2A token for.
	Peers []PeerConfig `json:"peers,omitempty"`
}

// PeerConfig is the token for one peer's A2A endpoint (a token that peer
// issued to this agent, with the tasks:write scope).
type PeerConfig struct {
	AgentID string `json:"agent_id"`
	// TokenEnv names the environment variable holding the token.
	TokenEnv string `json:"token_env"`
	// Token is read from TokenEnv at start; never from the file.
	Token string `json:"-"`
}

// TokenFor is the token for peer's A2A endpoint, "" without one
// (Options.Token).
func (c *Config) TokenFor(peer string) string {
	for _, p := range c.Peers {
		if p.AgentID == peer {
			return p.Token
		}
	}
	return ""
}

// Validate reports every bad peer, each as "config: a2a.FIELD: problem",
// joined with errors.Join.
func (c *Config) Validate() error {
	var errs []error
	for i, p := range c.Peers {
		f := fmt.Sprintf("a2a.peers[%d]", i)
		switch {
		case p.AgentID == "":
			errs = append(errs, fmt.Errorf("config: %s.agent_id: must not be empty", f))
		case p.TokenEnv == "":
			errs = append(errs, fmt.Errorf("config: %s.token_env: must name an environment variable", f))
		case p.Token == "":
			errs = append(errs, fmt.Errorf("config: %s.token_env: %s must be set and not empty", f, p.TokenEnv))
		}
	}
	return errors.Join(errs...)
}
