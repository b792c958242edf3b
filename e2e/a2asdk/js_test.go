package a2asdk_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestJSSDK runs js/client.test.mjs (node --test): @a2a-js/sdk 1.3.0's
// client, every method and the errors, against Synapse, a2a-go's server and
// the JS SDK's own server, started here.
func TestJSSDK(t *testing.T) {
	js := startJS(t) // skips without node and js/node_modules
	type jsTarget struct {
		Name  string            `json:"name"`
		Base  string            `json:"base"`
		Token string            `json:"token,omitempty"`
		Known map[string]string `json:"known,omitempty"`
	}
	var targets []jsTarget
	for _, tg := range []*target{startSynapse(t, ""), startRef(t), js} {
		known := map[string]string{}
		for k, v := range tg.known {
			known[k] = v
		}
		targets = append(targets, jsTarget{Name: tg.name, Base: tg.base, Token: tg.token, Known: known})
	}
	b, err := json.Marshal(targets)
	if err != nil {
		t.Fatal(err)
	}
	node, _ := exec.LookPath("node")
	cmd := exec.CommandContext(t.Context(), node, "--test", "--test-reporter=spec", "client.test.mjs")
	cmd.Dir = filepath.Join(".", "js")
	cmd.Env = append(os.Environ(), "A2A_TARGETS="+string(b))
	out, err := cmd.CombinedOutput()
	t.Logf("node --test client.test.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("the JS SDK client tests failed: %v", err)
	}
}
