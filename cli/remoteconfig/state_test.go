package remoteconfig_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/remoteconfig"
	"github.com/synapse-edge/synapse/cli/remoteconfig/desired"
)

// TestAtStart: serve starts on the file with the kept document's fragment
// over it; without a document, with one whose key is no longer pinned,
// or with one that no longer fits the file, on the file alone (logged).
func TestAtStart(t *testing.T) {
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	pub := base64.StdEncoding.EncodeToString(priv.Public().(ed25519.PublicKey))
	otherPub := base64.StdEncoding.EncodeToString(other.Public().(ed25519.PublicKey))
	setup := func(t *testing.T, keys string, kept []byte) (string, config.File, string, *bytes.Buffer) {
		t.Helper()
		dir := t.TempDir()
		data := filepath.Join(dir, "data")
		path := filepath.Join(dir, "c.json")
		body := `{"agent_id":"gw-7","data_dir":"` + data + `","max_concurrent_tasks":4,"mqtt":{"url":"mqtt://127.0.0.1:1"},"remote_config":{"operator_keys":[` + keys + `]}}`
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if kept != nil {
			if err := os.MkdirAll(data, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(data, remoteconfig.StateFile), kept, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		f, h, err := config.LoadHashed(path, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return path, f, h, new(bytes.Buffer)
	}
	doc := func(t *testing.T, k ed25519.PrivateKey, frag string) []byte {
		b, err := desired.Sign(k, "gw-7", 3, []byte(frag))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	noFlags := func(*config.File) {}
	env := func(string) string { return "" }
	t.Run("none", func(t *testing.T) {
		path, f, h, logs := setup(t, `"`+pub+`"`, nil)
		st := remoteconfig.AtStart(path, f, h, noFlags, env, slog.New(slog.NewTextHandler(logs, nil)))
		if st.Hash != h || st.Overlay != nil || st.Version != 0 || st.File.MaxConcurrentTasks != 4 {
			t.Errorf("start %+v, want the file alone", st)
		}
	})
	t.Run("kept", func(t *testing.T) {
		path, f, h, logs := setup(t, `"`+otherPub+`","`+pub+`"`, doc(t, priv, `{"max_concurrent_tasks":7}`))
		st := remoteconfig.AtStart(path, f, h, noFlags, env, slog.New(slog.NewTextHandler(logs, nil)))
		file, _ := os.ReadFile(path)
		if want := config.OverlaidHash(file, []byte(`{"max_concurrent_tasks":7}`)); st.Hash != want || st.Version != 3 || st.File.MaxConcurrentTasks != 7 {
			t.Errorf("start %+v, want v3 over the file, hash %s", st, want)
		}
	})
	for _, c := range []struct{ name, keys, frag, log string }{
		{"key removed", `"` + otherPub + `"`, `{"max_concurrent_tasks":7}`, "does not verify"},
		{"no longer fits", `"` + pub + `"`, `{"max_concurrent_tasks":-1}`, "does not fit"},
		{"locked key", `"` + pub + `"`, `{"data_dir":"/elsewhere"}`, "does not fit"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path, f, h, logs := setup(t, c.keys, doc(t, priv, c.frag))
			st := remoteconfig.AtStart(path, f, h, noFlags, env, slog.New(slog.NewTextHandler(logs, nil)))
			if st.Hash != h || st.Overlay != nil || st.File.MaxConcurrentTasks != 4 {
				t.Errorf("start %+v, want the file alone", st)
			}
			if !strings.Contains(logs.String(), c.log) {
				t.Errorf("log %q, want %q", logs.String(), c.log)
			}
		})
	}
}
