package admincmd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
)

func TestE2ETokens(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	tc := clitest.Decode[client.TokenCreated](t, clitest.Must(t, a, "", "token", "create", "reader", "--scope", "tasks:read", "--json"))
	if tc.Token == "" || tc.TokenID == "" || len(tc.Scopes) != 1 || tc.Scopes[0] != "tasks:read" {
		t.Fatalf("created token %+v", tc)
	}
	asReader := func(args ...string) (int, string, string) {
		return clitest.Run(t, "", append([]string{"--agent", a.URL, "--token", tc.Token}, args...)...)
	}
	if code, _, errOut := asReader("task", "list"); code != cli.ExitOK {
		t.Errorf("reader cannot list tasks: exit %d, %s", code, errOut)
	}
	if code, _, errOut := asReader("task", "submit", "echo"); code != cli.ExitFailure || !strings.Contains(errOut, "(403)") {
		t.Errorf("reader submit: exit %d, stderr %q; want 1 and 403", code, errOut)
	}
	if code, _, errOut := asReader("token", "list"); code != cli.ExitFailure || !strings.Contains(errOut, "(403)") {
		t.Errorf("reader token list: exit %d, stderr %q; want 1 and 403", code, errOut)
	}

	out := clitest.Must(t, a, "", "token", "list")
	if !strings.HasPrefix(out, "TOKEN ID") || !strings.Contains(out, tc.TokenID) || !strings.Contains(out, "reader") {
		t.Errorf("token list lacks the new token:\n%s", out)
	}
	if strings.Contains(out, tc.Token) {
		t.Error("token list shows the secret")
	}
	human := clitest.Must(t, a, "", "token", "create", "writer")
	if got := clitest.KVValue(t, human, "scopes"); got != "tasks:read,tasks:write" {
		t.Errorf("default scopes = %q, want tasks:read,tasks:write", got)
	}

	if out := clitest.Must(t, a, "", "token", "revoke", tc.TokenID); out != "revoked token "+tc.TokenID+"\n" {
		t.Errorf("revoke output %q", out)
	}
	if code, _, errOut := asReader("task", "list"); code != cli.ExitFailure || !strings.Contains(errOut, "(401)") {
		t.Errorf("revoked token: exit %d, stderr %q; want 1 and 401", code, errOut)
	}
}

func TestE2EDB(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	for range 3 {
		clitest.Must(t, a, "", "task", "submit", "echo", "--wait", "10s")
	}
	type checkOut struct {
		Source, Where string
		OK            bool
		Errors        []string
		Tasks         int
		SchemaVersion int `json:"schema_version"`
	}
	type backupOut struct {
		Path, Source string
		Bytes        int64
	}

	t.Run("check over HTTP", func(t *testing.T) {
		res := clitest.Decode[checkOut](t, clitest.Must(t, a, "", "db", "check", "--json"))
		if res.Source != "agent" || !res.OK || res.Tasks < 3 || res.SchemaVersion < 1 {
			t.Errorf("check = %+v, want ok from the agent with at least 3 tasks", res)
		}
	})
	t.Run("offline check of a served file is refused", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "db", "check", "--offline", "--data", a.DataDir)
		if code != cli.ExitFailure || !strings.Contains(errOut, "in use") || !strings.Contains(errOut, "leave out --offline") ||
			strings.Contains(errOut, "does not answer") {
			t.Errorf("exit %d, stderr %q; want 1, 'in use' and the advice to leave out --offline", code, errOut)
		}
	})
	backupDir := t.TempDir()
	httpCopy := filepath.Join(backupDir, "http.db")
	t.Run("backup over HTTP", func(t *testing.T) {
		res := clitest.Decode[backupOut](t, clitest.Must(t, a, "", "db", "backup", "--out", httpCopy, "--json"))
		st, err := os.Stat(httpCopy)
		if err != nil {
			t.Fatal(err)
		}
		if res.Source != "agent" || res.Bytes == 0 || st.Size() != res.Bytes {
			t.Errorf("backup = %+v, file has %d bytes", res, st.Size())
		}
		if entries, _ := os.ReadDir(backupDir); len(entries) != 1 {
			t.Errorf("backup dir has %d entries, want only the copy (no temp files)", len(entries))
		}
	})

	if code := a.Stop(t); code != 0 {
		t.Fatalf("agent exit code after SIGTERM = %d, want 0\n%s", code, a.Logs())
	}

	t.Run("another agent at --agent", func(t *testing.T) {
		// The stopped agent's directory, with another agent answering at
		// --agent: its file is checked, not the other agent.
		other := clitest.Agent(t, &synapseBin)
		res := clitest.Decode[checkOut](t, clitest.Must(t, other, "", "db", "check", "--data", a.DataDir, "--json"))
		if res.Source != "file" || !res.OK || res.Tasks < 3 {
			t.Errorf("check = %+v, want ok from the file of --data with at least 3 tasks", res)
		}
	})
	t.Run("check the file after stop", func(t *testing.T) {
		// No --offline: the agent no longer answers, so the file is used.
		res := clitest.Decode[checkOut](t, clitest.Must(t, a, "", "db", "check", "--data", a.DataDir, "--json"))
		if res.Source != "file" || !res.OK || res.Tasks < 3 {
			t.Errorf("check = %+v, want ok from the file with at least 3 tasks", res)
		}
	})
	t.Run("offline backup and check of the copies", func(t *testing.T) {
		copyDir := filepath.Join(backupDir, "restored")
		if err := os.Mkdir(copyDir, 0o700); err != nil {
			t.Fatal(err)
		}
		out := clitest.Must(t, a, "", "db", "backup", "--offline", "--data", a.DataDir, "--out", filepath.Join(copyDir, "synapse.db"))
		if !strings.HasPrefix(out, "wrote ") || !strings.Contains(out, "(from file ") {
			t.Errorf("backup output %q", out)
		}
		for _, dir := range []string{copyDir, httpDir(t, httpCopy)} {
			res := clitest.Decode[checkOut](t, clitest.Must(t, a, "", "db", "check", "--offline", "--data", dir, "--json"))
			if !res.OK || res.Tasks < 3 {
				t.Errorf("check of the copy in %s = %+v", dir, res)
			}
		}
	})
	t.Run("no database", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "db", "check", "--offline", "--data", t.TempDir())
		if code != cli.ExitFailure || !strings.Contains(errOut, "no database at") {
			t.Errorf("exit %d, stderr %q; want 1 and 'no database at'", code, errOut)
		}
	})
}

// httpDir moves the HTTP backup into a directory of its own as synapse.db,
// so that db check --data can read it.
func httpDir(t *testing.T, path string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "from-http")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path, filepath.Join(dir, "synapse.db")); err != nil {
		t.Fatal(err)
	}
	return dir
}
