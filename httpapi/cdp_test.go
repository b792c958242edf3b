package httpapi_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/internal/testutil"
)

// A headless Chromium driven over the Chrome DevTools protocol (CDP): the
// browser is started with --remote-debugging-port=0, writes the port it
// chose into DevToolsActivePort in its profile directory, and the test
// talks JSON-RPC over a WebSocket to the page target.

// chromiumPath finds a Chromium binary. Without one the test is skipped,
// unless CI=true: CI installs it (scripts/ci-deps.sh) and must not skip.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed; CI installs it with scripts/ci-deps.sh")
	}
	t.Skip("browser test skipped: chromium is not installed (apt-get install chromium)")
	return ""
}

// browser is one headless Chromium with a CDP connection to its page.
type browser struct {
	t    *testing.T
	cmd  *exec.Cmd
	conn *websocket.Conn
	dir  string

	wmu sync.Mutex // serialises writes
	mu  sync.Mutex
	id  int
	// waiting answers by call id
	waiting map[int]chan cdpMessage
	// problems are exceptions and error log entries seen on the page.
	problems []string
	readDone chan struct{}
}

type cdpMessage struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// startBrowser starts Chromium on about:blank and connects to its page.
func startBrowser(t *testing.T, bin string) *browser {
	t.Helper()
	return startBrowserEnv(t, bin, nil)
}

// startBrowserEnv is startBrowser with env added to the browser's
// environment (HOME, whose .pki/nssdb holds the CAs it trusts).
func startBrowserEnv(t *testing.T, bin string, env []string) *browser {
	t.Helper()
	dir, err := os.MkdirTemp("", "synapse-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--headless", "--remote-debugging-port=0", "--user-data-dir="+dir,
		"--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
		"--disable-sync", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
		"--disable-breakpad", "--disable-crash-reporter", "about:blank")
	cmd.Stderr = &stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.WaitDelay = time.Second                           // helpers may keep stderr open a moment
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its helpers die with it
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("start %s: %v", bin, err)
	}
	b := &browser{t: t, cmd: cmd, dir: dir, waiting: map[int]chan cdpMessage{}, readDone: make(chan struct{})}
	t.Cleanup(b.stop)

	var port string
	testutil.Eventually(t, pollTimeout, "Chromium's DevToolsActivePort", func() bool {
		raw, err := os.ReadFile(filepath.Join(dir, "DevToolsActivePort"))
		if err != nil {
			return false
		}
		port, _, _ = strings.Cut(string(raw), "\n")
		_, err = strconv.Atoi(port)
		return err == nil
	})
	var targets []struct {
		Type string `json:"type"`
		URL  string `json:"webSocketDebuggerUrl"`
	}
	testutil.Eventually(t, pollTimeout, "a page target", func() bool {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		targets = nil
		if json.NewDecoder(resp.Body).Decode(&targets) != nil {
			return false
		}
		for _, tg := range targets {
			if tg.Type == "page" {
				return true
			}
		}
		return false
	})
	for _, tg := range targets {
		if tg.Type == "page" {
			b.conn, _, err = websocket.DefaultDialer.Dial(tg.URL, nil)
			if err != nil {
				t.Fatalf("connect to the page target: %v\nchromium: %s", err, stderr.String())
			}
			break
		}
	}
	go b.read()
	return b
}

// read dispatches answers and records page problems until the connection
// closes.
func (b *browser) read() {
	defer close(b.readDone)
	for {
		_, raw, err := b.conn.ReadMessage()
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.waiting {
				close(ch)
				delete(b.waiting, id)
			}
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch := b.waiting[m.ID]; ch != nil {
				ch <- m
				delete(b.waiting, m.ID)
			}
		} else {
			b.note(m)
		}
		b.mu.Unlock()
	}
}

// note records exceptions and error-level log entries; b.mu is held.
func (b *browser) note(m cdpMessage) {
	switch m.Method {
	case "Runtime.exceptionThrown":
		b.problems = append(b.problems, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level, Source, Text, URL string
			} `json:"entry"`
		}
		if json.Unmarshal(m.Params, &p) == nil && p.Entry.Level == "error" {
			b.problems = append(b.problems, fmt.Sprintf("%s error: %s %s", p.Entry.Source, p.Entry.Text, p.Entry.URL))
		}
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(m.Params, &p) == nil && (p.Type == "error" || p.Type == "assert") {
			b.problems = append(b.problems, "console."+p.Type+": "+string(m.Params))
		}
	}
}

// call sends a CDP command and returns its result.
func (b *browser) call(method string, params any) json.RawMessage {
	b.t.Helper()
	b.mu.Lock()
	b.id++
	id := b.id
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	b.wmu.Lock()
	err := b.conn.WriteMessage(websocket.TextMessage, msg)
	b.wmu.Unlock()
	if err != nil {
		b.t.Fatalf("CDP %s: %v", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			b.t.Fatalf("CDP %s: connection closed", method)
		}
		if m.Error != nil {
			b.t.Fatalf("CDP %s: %d %s", method, m.Error.Code, m.Error.Message)
		}
		return m.Result
	case <-time.After(pollTimeout):
		b.t.Fatalf("CDP %s: no answer within %s", method, pollTimeout)
	}
	return nil
}

// eval evaluates a JavaScript expression in the page (awaiting a promise)
// and decodes its value into out (when not nil).
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	raw := b.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true})
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		b.t.Fatalf("evaluate %q: %v", expr, err)
	}
	if r.Exception != nil {
		b.t.Fatalf("evaluate %q: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			b.t.Fatalf("evaluate %q: value %s: %v", expr, r.Result.Value, err)
		}
	}
}

// waitJS polls a boolean expression until it is true.
func (b *browser) waitJS(what, expr string) {
	b.t.Helper()
	testutil.Eventually(b.t, pollTimeout, what, func() bool {
		var ok bool
		b.eval("!!("+expr+")", &ok)
		return ok
	})
}

// click scrolls the element matching selector into view and clicks its
// centre with real mouse events.
func (b *browser) click(selector string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	var box struct{ X, Y float64 }
	b.eval(`(() => { const e = document.querySelector(`+string(sel)+`); e.scrollIntoView({block: "center"});
		const r = e.getBoundingClientRect(); return {X: r.left + r.width / 2, Y: r.top + r.height / 2}; })()`, &box)
	for _, typ := range []string{"mousePressed", "mouseReleased"} {
		b.call("Input.dispatchMouseEvent", map[string]any{"type": typ, "x": box.X, "y": box.Y, "button": "left", "clickCount": 1})
	}
}

// screenshot saves a PNG of the viewport to path.
func (b *browser) screenshot(path string) {
	b.t.Helper()
	var r struct {
		Data []byte `json:"data"` // base64 in JSON
	}
	if err := json.Unmarshal(b.call("Page.captureScreenshot", map[string]any{"format": "png"}), &r); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, r.Data, 0o644); err != nil {
		b.t.Fatalf("write screenshot: %v", err)
	}
}

// pageProblems returns the exceptions and errors the page reported.
func (b *browser) pageProblems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// stop closes the browser (and its helper processes) and its profile.
func (b *browser) stop() {
	if b.conn != nil {
		msg, _ := json.Marshal(map[string]any{"id": 1 << 30, "method": "Browser.close"})
		b.wmu.Lock()
		_ = b.conn.WriteMessage(websocket.TextMessage, msg)
		b.wmu.Unlock()
	}
	exited := make(chan struct{})
	go func() { _ = b.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
	}
	// The browser's process group holds only the processes it started.
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		b.t.Errorf("chromium (pid %d) did not exit", b.cmd.Process.Pid)
	}
	if b.conn != nil {
		b.conn.Close()
		<-b.readDone
	}
	for range 20 { // helpers may still be writing for a moment
		if err := os.RemoveAll(b.dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return
		}
		time.Sleep(50 * time.Millisecond) // retry interval of the cleanup
	}
}
