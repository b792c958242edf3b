package httpapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/cli/reload"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/export"
	"github.com/synapse-edge/synapse/wire"
)

// consoleScene is an agent with something in every view: telemetry of the
// last minutes, a paired peer (with a contract) that went away leaving a
// dead letter, a group with an open vote, tasks, tokens.
type consoleScene struct {
	a, b   *testServer
	bID    string
	task   string // delegated to b, dead-lettered
	group  string
	vote   string
	victim string // token id to revoke
	secret string // its secret
	config string // the config file a's reloader reads
}

func newConsoleScene(t *testing.T) *consoleScene {
	t.Helper()
	sc := &consoleScene{config: filepath.Join(t.TempDir(), "synapse.json")}
	writeFile(t, sc.config, `{"max_concurrent_tasks": 10}`)
	a := startConsoleServer(t, sc.config)
	b := startPeerServer(t, "press-line-b")
	sc.a, sc.b, sc.bID = a, b, b.a.Identity().AgentID
	a.pairWith(t, b)
	b.pairWith(t, a)
	a.do(t, "POST", api("/negotiate"), []byte(`{"peer":"`+sc.bID+`"}`)).wantStatus(t, http.StatusCreated)

	// Five minutes of two devices and two metrics, one frame every 5 s.
	now := time.Now()
	d := tier1.Telemetry()
	var frames []tier1.Frame
	for i := 60; i > 0; i-- {
		at := now.Add(-time.Duration(i) * 5 * time.Second)
		x := float64(60 - i)
		for j, dev := range []string{"boiler-1", "boiler-2"} {
			frames = append(frames,
				tier1.Frame{tier1.Str(dev), tier1.Uint(uint64(i)), tier1.Int(at.UnixNano()), tier1.Str("temp"), tier1.Float(60 + 8*float64(j) + 5*math.Sin(x/7+float64(j))), tier1.Str("C")},
				tier1.Frame{tier1.Str(dev), tier1.Uint(uint64(i)), tier1.Int(at.UnixNano() + 1), tier1.Str("pressure"), tier1.Float(2.1 + 0.3*float64(j) + 0.2*math.Sin(x/5)), tier1.Str("bar")})
		}
	}
	a.do(t, "POST", api("/tier1/synapse.telemetry"), tier1.AppendBatch(nil, d.CapabilityID, d.Version, "history", frames, &d), withMsgpack()).
		wantStatus(t, http.StatusOK)

	for _, p := range []string{`{"msg":"hello"}`, `{"msg":"again"}`, `{"msg":"third"}`} {
		id := a.submit(t, `{"task_type":"echo","payload":`+p+`}`)
		a.waitStatus(t, id, wire.StatusCompleted)
	}

	// b goes away: two tasks for it end in a's outbox as dead letters.
	b.stop()
	sc.task = a.submit(t, `{"task_type":"echo","payload":{"msg":"for b"},"target":"`+sc.bID+`"}`)
	testutil.Eventually(t, pollTimeout, "a dead letter for b", func() bool { return len(sc.deadLetters(t)) == 1 })
	a.submit(t, `{"task_type":"echo","payload":{"msg":"for b, dropped"},"target":"`+sc.bID+`"}`)
	testutil.Eventually(t, pollTimeout, "two dead letters for b", func() bool { return len(sc.deadLetters(t)) == 2 })

	g := a.do(t, "POST", api("/group"), []byte(`{"name":"boiler-room","description":"Agents that share the boiler room's work"}`)).object(t)
	sc.group = g["group_id"].(string)
	v := a.do(t, "POST", api("/group/"+sc.group+"/vote"), []byte(`{"title":"Ship firmware 2.1 tonight?","options":["yes","no","wait"],"deadline_seconds":900}`)).object(t)
	sc.vote = v["vote_id"].(string)

	createToken(t, a, "dashboard", auth.ScopeTasksRead, auth.ScopeTier1Read)
	victim := a.do(t, "POST", api("/tokens"), []byte(`{"name":"old-sensor","scopes":["tier1:write"]}`)).object(t)
	sc.victim, sc.secret = victim["token_id"].(string), victim["token"].(string)
	return sc
}

// outboxItem is an entry of GET /outbox.
type outboxItem struct {
	ID     string `json:"id"`
	DeadAt string `json:"dead_at"`
}

// deadLetters lists a's dead letters for b, oldest first.
func (sc *consoleScene) deadLetters(t *testing.T) []outboxItem {
	t.Helper()
	var body struct {
		Items []outboxItem `json:"items"`
	}
	sc.a.do(t, "GET", api("/outbox?state=dead&peer="+sc.bID), nil).decodeInto(t, &body)
	return body.Items
}

// chartPoints is a JavaScript expression: the points the telemetry charts
// drew in their window.
const chartPoints = `[...document.querySelectorAll("#t-charts canvas")].reduce((n, c) => n + Number(c.dataset.points || 0), 0)`

// TestConsoleViews drives every view of the console in headless Chromium:
// the data appears, a live telemetry frame reaches the chart within a
// second, a dead letter is retried (and delivered), a ballot is cast, a
// token is created and revoked; no page error, console error or CSP
// violation, and nothing scrolls sideways at 390 px.
// SYNAPSE_SCREENSHOTS names a directory for PNGs of each view at 390 and
// 1280 px (make screenshots).
func TestConsoleViews(t *testing.T) {
	bin := chromiumPath(t)
	sc := newConsoleScene(t)
	a := sc.a
	shots := os.Getenv("SYNAPSE_SCREENSHOTS")

	br := startBrowser(t, bin)
	br.call("Runtime.enable", nil)
	br.call("Log.enable", nil)
	br.call("Page.enable", nil)
	br.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": `document.addEventListener("securitypolicyviolation",
		(e) => console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI))`})
	br.call("Network.enable", nil)
	br.call("Network.setCacheDisabled", map[string]any{"cacheDisabled": true})
	phone(br)
	br.call("Page.navigate", map[string]any{"url": a.base + "/"})
	br.waitJS("the sign-in form", `document.readyState === "complete" && !document.querySelector("#login-view").hidden`)
	// What the first load transferred (headers and bodies as sent), as the
	// page's resource timing counts it.
	var first struct{ Files, Bytes int }
	testutil.Eventually(t, pollTimeout, "the first load's requests to finish", func() bool {
		br.eval(`(() => { const n = performance.getEntriesByType("navigation")[0], e = performance.getEntriesByType("resource");
			if (!n || !n.responseEnd || !e.every((x) => x.responseEnd > 0)) return {Files: 0, Bytes: 0};
			return {Files: e.length + 1, Bytes: e.reduce((s, x) => s + x.transferSize, n.transferSize)}; })()`, &first)
		return first.Files >= 6
	})
	if first.Bytes > 100<<10 || first.Bytes < 10<<10 {
		t.Errorf("the first load transferred %d bytes in %d files, want under 100 KB (and the files)", first.Bytes, first.Files)
	}
	t.Logf("first load: %d files, %d bytes transferred", first.Files, first.Bytes)
	br.eval(`document.querySelector("#token").value = `+jsString(adminToken)+`; document.querySelector("#login").requestSubmit(); true`, nil)
	br.waitJS("the tabs", `!document.querySelector("#nav").hidden`)

	open := func(t *testing.T, view string) {
		t.Helper()
		br.click(`#nav a[data-view="` + view + `"]`)
		br.waitJS(view+" shown", `!document.querySelector(".view[data-view=`+view+`]").hidden`)
	}
	narrow := func(t *testing.T) {
		t.Helper()
		var w struct{ Scroll, Inner int }
		br.eval(`({Scroll: document.documentElement.scrollWidth, Inner: window.innerWidth})`, &w)
		if w.Inner != 390 || w.Scroll > w.Inner {
			t.Errorf("page is %d px wide in a %d px window: it must not scroll sideways on a phone", w.Scroll, w.Inner)
		}
	}
	shoot := func(t *testing.T, view string) {
		t.Helper()
		if shots == "" {
			return
		}
		br.eval(`window.scrollTo(0, 0); document.querySelector("#toast").hidden = true; true`, nil)
		br.screenshotFull(filepath.Join(shots, "console-"+view+"-390.png"), 390)
		desktop(br)
		br.eval(`window.dispatchEvent(new Event("resize")); true`, nil) // charts redraw at the new width
		br.screenshotFull(filepath.Join(shots, "console-"+view+"-1280.png"), 1280)
		phone(br)
		br.eval(`window.dispatchEvent(new Event("resize")); true`, nil)
	}

	t.Run("telemetry", func(t *testing.T) {
		open(t, "telemetry")
		br.waitJS("history in the chart and the table", `document.querySelectorAll("#t-charts .legend li").length === 4 &&
			document.querySelectorAll("#t-latest tbody tr").length === 4 && `+chartPoints+` >= 200`)
		br.waitJS("the live stream", `document.querySelector("#t-live").textContent.includes("live")`)
		var seen struct{ Table, Frames, Bytes, Oldest string }
		br.eval(`({Table: document.querySelector("#t-latest").textContent, Frames: document.querySelector("#t-frames").textContent,
			Bytes: document.querySelector("#t-bytes").textContent, Oldest: document.querySelector("#t-oldest").textContent})`, &seen)
		for _, want := range []string{"boiler-1", "boiler-2", "temp", "pressure", "bar"} {
			if !strings.Contains(seen.Table, want) {
				t.Errorf("latest values lack %q: %q", want, seen.Table)
			}
		}
		if seen.Frames != "240" || !strings.Contains(seen.Bytes, "of 1.0 GiB") || !strings.Contains(seen.Oldest, "min ago") {
			t.Errorf("retention tiles: frames %q, bytes %q, oldest %q", seen.Frames, seen.Bytes, seen.Oldest)
		}

		// The charts' window ends at the console's clock (SY.now), and the
		// history's points leave it 4 at a time every 5 s: one leaving
		// between the count before and the probe's arrival would cancel the
		// probe in the count. So the clock stands still (and the charts are
		// redrawn) while the probe, a second old, arrives.
		var frozen float64
		br.eval(`(() => { const t = SY.now(); window.realNow = SY.now; SY.now = () => t;
			window.dispatchEvent(new Event("resize")); return t; })()`, &frozen)
		var before int
		br.eval(chartPoints, &before)
		d := tier1.Telemetry()
		probeTS := int64(frozen-1000) * int64(time.Millisecond)
		f := []tier1.Frame{{tier1.Str("probe-7"), tier1.Uint(1), tier1.Int(probeTS), tier1.Str("temp"), tier1.Float(71.25), tier1.Str("C")}}
		a.do(t, "POST", api("/tier1/synapse.telemetry"), tier1.AppendBatch(nil, d.CapabilityID, d.Version, "", f, &d), withMsgpack()).
			wantStatus(t, http.StatusOK)
		var ms []int
		br.eval(fmt.Sprintf(`new Promise((done) => { const start = Date.now(), end = start + 1000; let pts = 0, tab = 0; (function poll() {
			if (!pts && `+chartPoints+` > %d) pts = Date.now() - start;
			if (!tab && document.querySelector("#t-latest").textContent.includes("71.25")) tab = Date.now() - start;
			if (pts && tab) return done([pts, tab]);
			if (Date.now() > end) return done([pts, tab]);
			setTimeout(poll, 5); })(); })`, before), &ms)
		br.eval(`SY.now = window.realNow; true`, nil)
		if len(ms) != 2 || ms[0] == 0 || ms[1] == 0 {
			t.Fatalf("a second after its acknowledgement the frame is not in the chart and the latest values (ms: %v)", ms)
		}
		t.Logf("a live frame reached the chart %d ms and the latest values %d ms after its acknowledgement", ms[0], ms[1])
		br.waitJS("frames/s", `document.querySelector("#t-rate").textContent !== "–" && Number(document.querySelector("#t-rrate").textContent) > 0`)
		narrow(t)
		shoot(t, "telemetry")
	})

	t.Run("peers and outbox", func(t *testing.T) {
		open(t, "peers")
		card := `#p-list .peer[data-id="` + sc.bID + `"]`
		br.waitJS("the peer with its dead letter", `document.querySelector(`+jsString(card)+`) &&
			document.querySelector(`+jsString(card)+`).textContent.includes("Dead letters2") && document.querySelectorAll("#p-deadlist .dead").length === 2`)
		var text string
		br.eval(`document.querySelector(`+jsString(card)+`).textContent`, &text)
		for _, want := range []string{"press-line-b", "Last seen", "ago", "Queued"} {
			if !strings.Contains(text, want) {
				t.Errorf("peer card lacks %q: %q", want, text)
			}
		}
		if strings.Contains(text, "Contractnone") {
			t.Errorf("peer card shows no contract: %q", text)
		}
		narrow(t)
		shoot(t, "peers")

		// Drop the second letter: it is gone from the outbox.
		letters := sc.deadLetters(t)
		br.click(`#p-deadlist .dead[data-id="` + letters[1].ID + `"] .drop`)
		testutil.Eventually(t, pollTimeout, "the dropped letter gone", func() bool {
			pending := string(a.do(t, "GET", api("/outbox?state=pending"), nil).body)
			return len(sc.deadLetters(t)) == 1 && !strings.Contains(pending, letters[1].ID)
		})
		br.waitJS("one dead letter listed", `document.querySelectorAll("#p-deadlist .dead").length === 1`)

		// Retry the first while b is still away: the letter goes back to
		// the queue (and, after its retries, dies again with a later dead_at).
		// The list is rebuilt every 3 s; a rebuild landing between finding
		// the button and the mouse events moves it from under the pointer,
		// so click again (as a person would) while the letter is still dead
		// and nothing was said.
		retry := `#p-deadlist .dead[data-id="` + letters[0].ID + `"] .retry`
		queued := `document.querySelector("#toast").textContent.includes("Queued again")`
		clicked := time.Time{}
		testutil.Eventually(t, pollTimeout, "the retry's toast", func() bool {
			var ok bool
			br.eval("!!("+queued+")", &ok)
			if ok {
				return true
			}
			if time.Since(clicked) > 3*time.Second && len(sc.deadLetters(t)) == 1 {
				var there bool
				br.eval(`!!document.querySelector(`+jsString(retry)+`)`, &there)
				if there {
					br.click(retry)
					clicked = time.Now()
				}
			}
			return false
		})
		testutil.Eventually(t, pollTimeout, "the letter retried and dead again", func() bool {
			l := sc.deadLetters(t)
			return len(l) == 1 && l[0].ID == letters[0].ID && l[0].DeadAt > letters[0].DeadAt
		})

		// b comes back: the task it missed completes.
		sc.b = reopenPeer(t, sc.b)
		t.Cleanup(sc.b.stop)
		a.waitStatus(t, sc.task, wire.StatusCompleted)
		br.waitJS("the empty dead-letter list", `!document.querySelector("#p-deadlist .dead")`)

		// The exports panel (after the dead letters: its cards and charts
		// move the list below them as they fill in): both backing off
		// with the frames ingested above waiting; pause one from its card.
		br.waitJS("the exports with their backlog", `document.querySelectorAll("#x-list .export").length === 2 &&
			document.querySelector('#x-list .export[data-name="cloud"]').textContent.includes("backing off") &&
			!document.querySelector('#x-list .export[data-name="cloud"]').textContent.includes("Backlog0 frames") &&
			!document.querySelector("#x-charts").hidden`)
		br.click(`#x-list .export[data-name="site"] button.pause`)
		br.waitJS("site paused", `document.querySelector('#x-list .export[data-name="site"]').textContent.includes("paused")`)
	})

	t.Run("groups", func(t *testing.T) {
		open(t, "groups")
		vote := `#g-list .vote[data-id="` + sc.vote + `"]`
		br.waitJS("the group and its open vote", `document.querySelector(`+jsString(vote+" .ballot")+`)`)
		var text string
		br.eval(`document.querySelector("#g-list").textContent`, &text)
		for _, want := range []string{"boiler-room", "owner", "Ship firmware 2.1 tonight?", "closes in", "0 of 1 ballots"} {
			if !strings.Contains(text, want) {
				t.Errorf("groups view lacks %q: %q", want, text)
			}
		}
		narrow(t)
		shoot(t, "groups")
		br.click(vote + ` .ballot`) // the first option: yes
		testutil.Eventually(t, pollTimeout, "the ballot on the agent", func() bool {
			return strings.Contains(string(a.do(t, "GET", api("/group/"+sc.group+"/vote/"+sc.vote), nil).body), `"option":"yes"`)
		})
		br.waitJS("the result", `document.querySelector("#g-list").textContent.includes("Recent results")`)
	})

	t.Run("health", func(t *testing.T) {
		open(t, "health")
		br.waitJS("figures, tasks and the audit chain", `document.querySelector("#h-size").textContent.includes("iB") &&
			document.querySelector("#h-commit").textContent.includes("ms") &&
			document.querySelector("#h-tasks").textContent.includes("completed") &&
			document.querySelector("#h-audit").textContent.includes("Intact")`)
		var sum struct {
			ByStatus map[string]int `json:"by_status"`
		}
		a.do(t, "GET", api("/tasks/summary"), nil).decodeInto(t, &sum)
		var s struct{ Status, Tasks string }
		br.eval(`({Status: document.querySelector("#h-status").textContent, Tasks: document.querySelector("#h-tasks").textContent})`, &s)
		if want := fmt.Sprintf("completed%d", sum.ByStatus["completed"]); s.Status != "SERVING" || !strings.Contains(s.Tasks, want) || sum.ByStatus["completed"] < 4 {
			t.Errorf("health: status %q, tasks %q (want SERVING and %s; the summary: %v)", s.Status, s.Tasks, want, sum.ByStatus)
		}
		br.waitJS("growth measured", `document.querySelector("#h-growth").textContent.includes("/min")`)
		br.waitJS("the config file, not reloaded yet", `document.querySelector("#h-config").textContent.includes("none since start")`)
		// A bad file: refused, its problem on the page; then a good one.
		writeFile(t, sc.config, `{"max_concurent_tasks": 4}`)
		a.do(t, "POST", api("/admin/reload"), nil).wantStatus(t, http.StatusUnprocessableEntity)
		br.waitJS("the refused reload", `document.querySelector("#h-config").textContent.includes("refused, nothing changed") &&
			document.querySelector("#h-config").textContent.includes('unknown key "max_concurent_tasks"')`)
		writeFile(t, sc.config, `{"max_concurrent_tasks": 4}`)
		a.do(t, "POST", api("/admin/reload"), nil).wantStatus(t, http.StatusOK)
		sum256 := sha256.Sum256([]byte(`{"max_concurrent_tasks": 4}`))
		hash := hex.EncodeToString(sum256[:])
		br.waitJS("the applied reload", `document.querySelector("#h-config").textContent.includes("✓ applied · api") &&
			document.querySelector("#h-config").textContent.includes("max_concurrent_tasks") &&
			document.querySelector("#h-config").textContent.includes(`+jsString(hash[:16])+`)`)
		if got := a.a.Config().MaxConcurrentTasks; got != 4 {
			t.Errorf("max_concurrent_tasks after the reload: %d, want 4", got)
		}
		narrow(t)
		shoot(t, "health")
	})

	t.Run("tokens", func(t *testing.T) {
		open(t, "tokens")
		item := `#k-list .token[data-id="` + sc.victim + `"]`
		br.waitJS("the token list", `document.querySelector(`+jsString(item)+`)`)
		br.eval(`document.querySelector("#k-name").value = "line-3 sensors";
			for (const s of ["tier1:write", "tier1:read"]) document.querySelector('#k-scopes input[value="' + s + '"]').checked = true; true`, nil)
		br.click(`#k-form button[type=submit]`)
		br.waitJS("the new secret", `!document.querySelector("#k-secret").hidden && document.querySelector("#k-value").textContent.startsWith("syn_")`)
		var secret string
		br.eval(`document.querySelector("#k-value").textContent`, &secret)
		a.do(t, "GET", api("/tier1/routines"), nil, withToken(secret)).wantStatus(t, http.StatusOK)
		br.waitJS("the new token listed", `document.querySelector("#k-list").textContent.includes("line-3 sensors")`)
		narrow(t)
		shoot(t, "tokens")

		a.do(t, "GET", api("/tasks"), nil, withToken(sc.secret)).wantStatus(t, http.StatusForbidden) // alive, lacks tasks:read
		br.click(item + " .revoke")
		br.waitJS("the confirm step", `document.querySelector(`+jsString(item+" .revoke")+`).textContent === "Revoke now"`)
		br.click(item + " .revoke")
		br.waitJS("the token gone", `!document.querySelector(`+jsString(item)+`)`)
		a.do(t, "GET", api("/tasks"), nil, withToken(sc.secret)).wantStatus(t, http.StatusUnauthorized)
	})

	t.Run("decisions", func(t *testing.T) {
		open(t, "decisions")
		br.waitJS("the tasks", `document.querySelectorAll("#tasks li").length >= 4`)
		narrow(t)
		shoot(t, "decisions")
	})

	problems := br.pageProblems()
	if len(problems) > 0 {
		t.Errorf("the page reported problems:\n%s", strings.Join(problems, "\n"))
	}

	// A token for telemetry only signs in too: the views it may not read
	// say so (the browser logs their 403 answers, nothing else).
	t.Run("a telemetry-only token", func(t *testing.T) {
		tok := createToken(t, a, "wall-screen", auth.ScopeTier1Read)
		br.click("#logout")
		br.waitJS("the sign-in form", `!document.querySelector("#login-view").hidden && document.querySelector("#nav").hidden`)
		br.eval(`document.querySelector("#token").value = `+jsString(tok)+`; document.querySelector("#login").requestSubmit(); true`, nil)
		br.waitJS("the tabs", `!document.querySelector("#nav").hidden`)
		open(t, "decisions")
		br.waitJS("the decisions note", `document.querySelector("#pending-empty").textContent.includes("may not see decisions")`)
		open(t, "telemetry")
		br.waitJS("the charts", `document.querySelectorAll("#t-charts .legend li").length >= 4 && document.querySelector("#t-live").textContent.includes("live")`)
		open(t, "tokens")
		br.waitJS("the tokens note", `document.querySelector("#v-tokens .note").textContent.includes("lacks the admin scope") && document.querySelector("#k-form").hidden`)
		for _, p := range br.pageProblems()[len(problems):] {
			if !strings.Contains(p, "status of 403") {
				t.Errorf("the page reported: %s", p)
			}
		}
	})
}

func phone(b *browser) {
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 390, "height": 844, "deviceScaleFactor": 2, "mobile": true})
}

func desktop(b *browser) {
	b.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": false})
}

// screenshotFull saves a PNG of the whole page (up to 2,400 px tall) at
// width px.
func (b *browser) screenshotFull(path string, width int) {
	b.t.Helper()
	var h float64
	b.eval(`document.documentElement.scrollHeight`, &h)
	h = min(max(h, 400), 2400)
	var r struct {
		Data []byte `json:"data"`
	}
	raw := b.call("Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true,
		"clip": map[string]any{"x": 0, "y": 0, "width": width, "height": h, "scale": 1}})
	if err := json.Unmarshal(raw, &r); err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.WriteFile(path, r.Data, 0o644); err != nil {
		b.t.Fatalf("write screenshot: %v", err)
	}
}

// startConsoleServer is an agent wired as synapse serve wires it: with
// groups and human-in-the-loop, an endpoint peers can reach, and the
// reloader of the config file at path (serve's flags: the agent's own
// data directory, address and name).
func startConsoleServer(t *testing.T, path string) *testServer {
	t.Helper()
	return startWiredServer(t, "gateway-a", true, func(o *peernode.Options) {
		o.Exports = func(a *agent.Agent, t1 *tier1.Service) httpapi.Exports {
			// Two exports to upstreams that are down: a backlog and a lag.
			s := export.New([]export.Config{
				{Name: "cloud", Endpoint: "http://127.0.0.1:1", Priority: 1, BandwidthBytesPerS: 50000, MaxBackoffMS: 500},
				{Name: "site", Endpoint: "ws://127.0.0.1:1", Priority: 5, Start: "all", Order: "fifo", MaxBackoffMS: 500},
			}, export.Options{Ingestor: t1.Ingestor(), DB: a.Store(), Transport: a.Transport(), Source: a.Identity().AgentID})
			if err := s.Open(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.RegisterMetrics(a.Metrics())
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); s.Run(ctx) }()
			t.Cleanup(func() { cancel(); <-done })
			return s
		}
		o.Reloader = func(a *agent.Agent) httpapi.Reloader {
			flags := func(f *config.File) {
				c := a.Config()
				f.DataDir, f.Listen, f.Endpoint, f.AgentName = c.DataDir, c.Listen, c.Endpoint, c.AgentName
			}
			running := config.Defaults()
			flags(&running)
			return reload.New(a, slog.New(slog.DiscardHandler), reload.Options{Path: path, Hash: "started-without-this-file", Running: running, Flags: flags})
		}
	})
}

// writeFile replaces the file at path with body (a new file renamed over
// it, as a deployment writes a config file).
func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path+".new", []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
}
