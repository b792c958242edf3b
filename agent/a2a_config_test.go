package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
)

func TestA2AConfig(t *testing.T) {
	cfg := agent.Defaults()
	if err := cfg.LoadFile(writeConfig(t, `{"a2a": {"peers": [{"agent_id": "b", "token_env": "B_A2A_TOKEN"}, {"agent_id": "c", "token_env": "C_A2A_TOKEN"}]}}`)); err != nil {
		t.Fatalf("LoadFile: %v", err)
	}
	env := map[string]string{"B_A2A_TOKEN": "tok-b"}
	if err := cfg.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if got := cfg.A2A.TokenFor("b"); got != "tok-b" {
		t.Errorf("TokenFor(b) = %q, want tok-b", got)
	}
	if got := cfg.A2A.TokenFor("x"); got != "" {
		t.Errorf("TokenFor(x) = %q, want none", got)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "a2a.peers[1].token_env") {
		t.Errorf("Validate with C_A2A_TOKEN unset = %v, want an error naming a2a.peers[1].token_env", err)
	}
	env["C_A2A_TOKEN"] = "tok-c"
	if err := cfg.LoadEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	b, err := json.Marshal(cfg)
	if err != nil || strings.Contains(string(b), "tok-") {
		t.Errorf("the config as JSON shows a token (%v): %s", err, b)
	}
}
