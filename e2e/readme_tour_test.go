package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The README's tour, run as written: every ```sh block that follows a
// "<!-- tour -->" line, in order, as one bash script (set -euo pipefail),
// in a directory laid out as the README assumes (bin/synapse, data/ of the
// agent of make run, data-b/ of the second agent). The only changes are
// the ports: 127.0.0.1:8080 and :8081 become the two agents' free ports.

// tourMarker is the line before each block the tour test runs.
const tourMarker = "<!-- tour -->"

// minTourBlocks guards against the markers being dropped: the README has
// at least this many runnable blocks.
const minTourBlocks = 6

// tourTimeout bounds the whole script.
const tourTimeout = 3 * time.Minute

// readmeBlocks returns the tour blocks of the README, dedented to their
// fence, and the README's ```go blocks.
func readmeBlocks(t *testing.T) (tour []string, goBlocks []string) {
	t.Helper()
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		marked := line == tourMarker
		if marked {
			i++
			if i >= len(lines) || strings.TrimSpace(lines[i]) != "```sh" {
				t.Fatalf("README.md:%d: %s is not followed by a ```sh fence", i, tourMarker)
			}
		} else if line != "```go" {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		var b strings.Builder
		for i++; i < len(lines) && strings.TrimSpace(lines[i]) != "```"; i++ {
			b.WriteString(strings.TrimPrefix(lines[i], indent))
			b.WriteByte('\n')
		}
		if marked {
			tour = append(tour, b.String())
		} else {
			goBlocks = append(goBlocks, b.String())
		}
	}
	return tour, goBlocks
}

// TestREADMETour runs the tour against two agent processes and checks what
// it must show: every command succeeds, no answer is an error, and the two
// agents paired with the README's commands delegate a task that completes
// at the first try (no waiting_for_peer in its history).
func TestREADMETour(t *testing.T) {
	for _, tool := range []string{"bash", "curl", "jq", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the tour needs %s (scripts/ci-deps.sh installs it): %v", tool, err)
			}
			t.Skipf("the tour needs %s: %v", tool, err)
		}
	}
	blocks, _ := readmeBlocks(t)
	if len(blocks) < minTourBlocks {
		t.Fatalf("README.md has %d tour blocks, want at least %d (each a ```sh fence after %q)", len(blocks), minTourBlocks, tourMarker)
	}

	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(synapseBin, filepath.Join(dir, "bin", "synapse")); err != nil {
		t.Fatal(err)
	}
	a := startAgent(t, agentOpts{dataDir: filepath.Join(dir, "data")})
	b := startAgent(t, agentOpts{dataDir: filepath.Join(dir, "data-b")})
	// As make run and serve write them when SYNAPSE_ADMIN_TOKEN is unset.
	for _, x := range []*agentProc{a, b} {
		if err := os.WriteFile(filepath.Join(x.dataDir, "admin.token"), []byte(x.token+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ports := strings.NewReplacer(
		"127.0.0.1:8080", strings.TrimPrefix(a.url(), "http://"),
		"127.0.0.1:8081", strings.TrimPrefix(b.url(), "http://"))
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for i, blk := range blocks {
		fmt.Fprintf(&script, "echo '### tour block %d' >&2\n", i+1)
		script.WriteString(ports.Replace(blk))
	}

	ctx, cancel := context.WithTimeout(context.Background(), tourTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(cleanEnv(), "HOME="+dir, "SYNAPSE_AGENT="+a.url())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	start := time.Now()
	err := cmd.Run()
	t.Logf("the tour took %s", time.Since(start).Round(time.Millisecond))
	if testing.Verbose() {
		t.Logf("stdout:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}
	if err != nil {
		t.Fatalf("the tour failed: %v\nscript:\n%s\nstdout:\n%s\nstderr:\n%s", err, script.String(), out.String(), errOut.String())
	}
	if strings.Contains(out.String(), `"error":{`) || strings.Contains(out.String(), `"error": {`) {
		t.Errorf("an answer of the tour is an error:\n%s", out.String())
	}

	t.Run("delegation completed at the first try", func(t *testing.T) {
		peerB := agentID(t, b)
		tasks := listTasks(t, a, "completed")
		delegated := 0
		for _, task := range tasks {
			if task.Target != peerB {
				continue
			}
			delegated++
			full := getTask(t, a, task.TaskID)
			for _, h := range full.History {
				if strings.HasPrefix(h.Reason, "waiting_for_peer") {
					t.Errorf("delegated task %s waited for the peer: %s", task.TaskID, h.Reason)
				}
			}
		}
		if delegated < 2 {
			t.Errorf("%d completed tasks delegated to %s, want the tour's 2; tasks %+v", delegated, peerB, tasks)
		}
	})
	t.Run("tier-1 frames sent and read back", func(t *testing.T) {
		for _, want := range []string{
			`{"ok":true,"accepted":1,"batch_id":"tour-1"}`,
			`1,000 frames in 10 batches`,
			`[{"device_id":"boiler-1","seq":1,"ts":1796083200000000000,"metric":"temp","value":21.5,"unit":"C"}]`,
		} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("the tour's output lacks %s", want)
			}
		}
	})
	// What the tour leaves in the directory it runs in (the repository,
	// for a reader) is all ignored by git: data/, data-b/, bin/.
	t.Run("leaves only ignored files", func(t *testing.T) {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) < 3 {
			t.Fatalf("the tour directory holds %d entries, want at least bin, data and data-b", len(entries))
		}
		for _, e := range entries {
			name := e.Name()
			if e.IsDir() {
				name += "/"
			}
			check := exec.Command("git", "check-ignore", "--no-index", "-q", name)
			check.Dir = root
			if err := check.Run(); err != nil {
				t.Errorf("the tour leaves %s, which .gitignore does not ignore (git check-ignore: %v)", name, err)
			}
		}
	})
	t.Run("the cancelled task", func(t *testing.T) {
		if len(listTasks(t, a, "cancelled")) != 1 {
			t.Errorf("want the one task the tour cancels")
		}
	})
}

// TestREADMEEmbedding: the README's Go blocks are parts of
// examples/embed/main.go, which make test builds and runs.
func TestREADMEEmbedding(t *testing.T) {
	_, goBlocks := readmeBlocks(t)
	if len(goBlocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "examples", "embed", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	// Compared line by line without the indentation.
	norm := func(s string) string {
		var b strings.Builder
		sc := bufio.NewScanner(strings.NewReader(s))
		for sc.Scan() {
			if l := strings.TrimSpace(sc.Text()); l != "" {
				b.WriteString(l + "\n")
			}
		}
		return b.String()
	}
	for i, blk := range goBlocks {
		if !strings.Contains(norm(string(src)), norm(blk)) {
			t.Errorf("README.md's go block %d is not in examples/embed/main.go:\n%s", i+1, blk)
		}
	}
}

type tourTask struct {
	TaskID  string `json:"task_id"`
	Target  string `json:"target"`
	Status  string `json:"status"`
	History []struct {
		Status string `json:"status"`
		Reason string `json:"reason"`
	} `json:"history"`
}

func apiGet(t *testing.T, a *agentProc, path string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, a.url()+"/api/v1/synapse"+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+a.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

func agentID(t *testing.T, a *agentProc) string {
	t.Helper()
	var id struct {
		AgentID string `json:"agent_id"`
	}
	apiGet(t, a, "/identity", &id)
	return id.AgentID
}

func listTasks(t *testing.T, a *agentProc, status string) []tourTask {
	t.Helper()
	var l struct {
		Tasks []tourTask `json:"tasks"`
	}
	apiGet(t, a, "/tasks?page_size=200&status="+status, &l)
	return l.Tasks
}

func getTask(t *testing.T, a *agentProc, id string) tourTask {
	t.Helper()
	var task tourTask
	apiGet(t, a, "/task/"+id, &task)
	return task
}
