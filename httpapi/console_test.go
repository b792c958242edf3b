package httpapi_test

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/wire"
)

// consoleBudget bounds the console's files together, gzipped as they are
// embedded and sent.
const consoleBudget = 40 << 10

func TestConsoleFiles(t *testing.T) {
	ts := startServer(t)
	files := []struct {
		path, contentType string
	}{
		{"/", "text/html"},
		{"/console/index.html", "text/html"},
		{"/console/app.js", "text/javascript"},
		{"/console/app.css", "text/css"},
		{"/console/chart.js", "text/javascript"},
		{"/console/ops.js", "text/javascript"},
		{"/console/net.js", "text/javascript"},
	}
	total := 0
	for _, f := range files {
		t.Run(f.path, func(t *testing.T) {
			r := ts.do(t, "GET", f.path, nil, withToken("")) // no auth
			r.wantStatus(t, http.StatusOK)
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, f.contentType) {
				t.Errorf("Content-Type = %q, want %s", ct, f.contentType)
			}
			csp := r.header.Get("Content-Security-Policy")
			for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
				if !strings.Contains(csp, want) {
					t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
				}
			}
			if strings.Contains(csp, "unsafe") {
				t.Errorf("Content-Security-Policy %q allows unsafe sources", csp)
			}
			if got := r.header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options = %q", got)
			}
			etag := r.header.Get("ETag")
			if etag == "" {
				t.Fatalf("no ETag")
			}
			ts.do(t, "GET", f.path, nil, withToken(""), withHeader("If-None-Match", etag)).wantStatus(t, http.StatusNotModified)

			// The file as sent equals its source in console/, inflated
			// (no Accept-Encoding) or gzipped.
			name := strings.TrimPrefix(f.path, "/console/")
			if f.path == "/" {
				name = "index.html"
			}
			src, err := os.ReadFile(filepath.Join("console", name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(r.body, src) {
				t.Errorf("%s inflated differs from console/%s: run go generate ./httpapi", f.path, name)
			}
			if ce := r.header.Get("Content-Encoding"); ce != "" {
				t.Errorf("Content-Encoding = %q without Accept-Encoding", ce)
			}
			z := ts.do(t, "GET", f.path, nil, withToken(""), withHeader("Accept-Encoding", "gzip, deflate, br"))
			z.wantStatus(t, http.StatusOK)
			if ce := z.header.Get("Content-Encoding"); ce != "gzip" || z.header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("Content-Encoding = %q, Vary = %q; want gzip, Accept-Encoding", ce, z.header.Get("Vary"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(z.body))
			if err != nil {
				t.Fatalf("gzip: %v", err)
			}
			if raw, err := io.ReadAll(zr); err != nil || !bytes.Equal(raw, src) {
				t.Errorf("%s gzipped inflates to %d bytes (%v), want console/%s", f.path, len(raw), err, name)
			}
			if zetag := z.header.Get("ETag"); zetag == etag || zetag == "" {
				t.Errorf("gzipped ETag %q, identity ETag %q: want two different tags", zetag, etag)
			}
			if f.path != "/" {
				total += len(z.body)
			}
		})
	}
	t.Run("every source is embedded", func(t *testing.T) {
		names, _ := filepath.Glob("console/*")
		for _, n := range names {
			if strings.HasSuffix(n, ".gz") {
				continue
			}
			if _, err := os.Stat(n + ".gz"); err != nil {
				t.Errorf("%s has no %s.gz: run go generate ./httpapi", n, n)
			}
		}
	})
	t.Run("size", func(t *testing.T) {
		if total > consoleBudget || total == 0 {
			t.Errorf("console files = %d bytes gzipped, budget %d", total, consoleBudget)
		}
		t.Logf("console: %d bytes gzipped", total)
	})
	t.Run("no inline script or style", func(t *testing.T) {
		page := string(ts.do(t, "GET", "/", nil).body)
		scripts := regexp.MustCompile(`<script[^>]*>([^<]*)</script>`).FindAllStringSubmatch(page, -1)
		if len(scripts) == 0 {
			t.Fatalf("page has no script tag")
		}
		for _, m := range scripts {
			if !strings.Contains(m[0], ` src="/console/`) || strings.TrimSpace(m[1]) != "" {
				t.Errorf("script tag %q: want only src= scripts from /console/", m[0])
			}
		}
		for _, bad := range []*regexp.Regexp{
			regexp.MustCompile(`\son[a-z]+\s*=`),
			regexp.MustCompile(`\sstyle\s*=`),
			regexp.MustCompile(`<style`),
		} {
			if m := bad.FindString(page); m != "" {
				t.Errorf("page has %q (CSP forbids inline script and style)", m)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		ts.do(t, "GET", "/console/missing.js", nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
		ts.do(t, "GET", "/console/../go.mod", nil).wantError(t, http.StatusNotFound, wire.CodeNotFound)
		ts.do(t, "POST", "/", []byte(`{}`)).wantError(t, http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed)
	})
}

// TestConsoleInBrowser signs in to the console in headless Chromium on a
// phone-sized screen, finds a pending confirm task, amends and approves
// one request, approves another, and checks that both tasks complete.
// SYNAPSE_CONSOLE_SCREENSHOT names a file for a screenshot (default: in
// the test's temporary directory).
func TestConsoleInBrowser(t *testing.T) {
	bin := chromiumPath(t)
	ts, _ := startHILServer(t)
	reviewer := ts.token(t, auth.ScopeHILL1, auth.ScopeTasksRead)
	first := ts.confirmTask(t, "Deploy build 42 to the gateways?")

	b := startBrowser(t, bin)
	b.call("Runtime.enable", nil)
	b.call("Log.enable", nil)
	b.call("Page.enable", nil)
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true})
	b.call("Page.navigate", map[string]any{"url": ts.base + "/"})
	b.waitJS("the sign-in form", `document.readyState === "complete" && !document.querySelector("#login-view").hidden`)

	tok, _ := json.Marshal(reviewer)
	b.eval(`document.querySelector("#token").value = `+string(tok)+`; document.querySelector("#login").requestSubmit(); true`, nil)
	card := fmt.Sprintf(`#pending .req[data-id=%q]`, first)
	b.waitJS("the pending request", `document.querySelector(`+jsString(card)+`)`)
	b.waitJS("the countdown and the tasks", `document.querySelector(`+jsString(card+" .countdown")+`).textContent.includes("left") &&
		document.querySelectorAll("#tasks li").length > 0`)

	var seen struct {
		Text        string
		Level       string
		ScrollWidth int
		Width       int
		Stored      string
	}
	b.eval(`(() => { const c = document.querySelector(`+jsString(card)+`); return {
		Text: c.textContent, Level: c.querySelector(".lvl").textContent,
		ScrollWidth: document.documentElement.scrollWidth, Width: window.innerWidth,
		Stored: sessionStorage.getItem("synapse.token") }; })()`, &seen)
	for _, want := range []string{"Deploy build 42 to the gateways?", "window", "tonight", "low traffic", first} {
		if !strings.Contains(seen.Text, want) {
			t.Errorf("card text lacks %q: %q", want, seen.Text)
		}
	}
	var badge string
	b.eval(`(() => { const e = document.querySelector("#nav-pending"); return e.hidden ? "hidden" : e.textContent; })()`, &badge)
	if badge != "1" {
		t.Errorf("the Decisions tab's badge = %q, want 1 (one request waits)", badge)
	}
	if seen.Level != "Level 1/3 · hil:l1" {
		t.Errorf("level = %q", seen.Level)
	}
	if seen.Width != 390 || seen.ScrollWidth > seen.Width {
		t.Errorf("page is %d px wide in a %d px window: it must not scroll sideways on a phone", seen.ScrollWidth, seen.Width)
	}
	if seen.Stored != reviewer {
		t.Errorf("sessionStorage token = %q, want the token signed in with", seen.Stored)
	}

	shot := os.Getenv("SYNAPSE_CONSOLE_SCREENSHOT")
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "console.png")
	}
	b.screenshot(shot)
	t.Logf("screenshot at 390x844: %s", shot)

	t.Run("amend and approve", func(t *testing.T) {
		b.click(card + " .amend summary")
		b.eval(`document.querySelector(`+jsString(card+" .rows .v")+`).value = '"now"'; true`, nil)
		b.click(card + " .modify")
		task := ts.waitStatus(t, first, wire.StatusCompleted)
		var res struct {
			Action         string         `json:"action"`
			ApprovedFields map[string]any `json:"approved_fields"`
			DecidedBy      struct {
				UserID string `json:"user_id"`
			} `json:"decided_by"`
		}
		if err := json.Unmarshal([]byte(fmt.Sprint(task["result_json"])), &res); err != nil {
			t.Fatalf("result_json: %v", err)
		}
		if res.Action != "modify" || res.ApprovedFields["window"] != "now" || !strings.HasPrefix(res.DecidedBy.UserID, "tok_") {
			t.Errorf("result = %+v, want modify window=now by the reviewer's token", res)
		}
		b.waitJS("the decided card to go", `!document.querySelector(`+jsString(card)+`)`)
	})
	t.Run("live request and approve", func(t *testing.T) {
		second := ts.confirmTask(t, "Reboot gateway 7?")
		card := fmt.Sprintf(`#pending .req[data-id=%q]`, second)
		b.waitJS("the new request to arrive live", `document.querySelector(`+jsString(card)+`)`)
		b.click(card + " .approve")
		ts.waitStatus(t, second, wire.StatusCompleted)
		b.waitJS("the empty list", `document.querySelectorAll("#pending .req").length === 0 && !document.querySelector("#pending-empty").hidden`)
	})
	if p := b.pageProblems(); len(p) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(p, "\n"))
	}
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
