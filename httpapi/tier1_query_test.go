package httpapi_test

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// TestTier1PageTokens: GET /tier1/{id}/frames pages with opaque tokens
// through every frame once, and refuses an older agent's token (the store
// key of a block and a 16-bit index) with a 400 that says what to do.
func TestTier1PageTokens(t *testing.T) {
	ts := startServer(t)
	now := time.Now().UnixNano()
	for i, dev := range []string{"a", "b", "c"} {
		ts.do(t, "POST", api("/tier1/synapse.telemetry"), telemetryBatch(fmt.Sprintf("p%d", i), dev, i*10, 10, now), withMsgpack()).
			wantStatus(t, http.StatusOK)
	}
	whole := ts.frames(t, "")
	if len(whole) != 30 {
		t.Fatalf("stored %d frames, want 30", len(whole))
	}
	var paged []map[string]any
	tok := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("more than 10 pages of 4 frames")
		}
		q := "?limit=4"
		if tok != "" {
			q += "&page_token=" + url.QueryEscape(tok)
		}
		r := ts.do(t, "GET", api("/tier1/synapse.telemetry/frames"+q), nil)
		r.wantStatus(t, http.StatusOK)
		var page struct {
			Frames []map[string]any `json:"frames"`
			Next   string           `json:"next_page_token"`
		}
		if err := json.Unmarshal(r.body, &page); err != nil {
			t.Fatal(err)
		}
		paged = append(paged, page.Frames...)
		if page.Next == "" {
			break
		}
		tok = page.Next
	}
	if got, want := fmt.Sprint(paged), fmt.Sprint(whole); got != want {
		t.Errorf("pages of 4 =\n%s\nwant\n%s", got, want)
	}

	old := base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint16(tier1.FrameKey(nil, now, "a", 1), 3))
	for name, c := range map[string]struct{ tok, want string }{
		"an older agent's": {old, "older version"},
		"made up":          {"p1.AAAA", "not one this agent gave"},
	} {
		t.Run(name, func(t *testing.T) {
			e := ts.do(t, "GET", api("/tier1/synapse.telemetry/frames?page_token="+url.QueryEscape(c.tok)), nil).
				wantError(t, http.StatusBadRequest, wire.CodeInvalidParams)
			if d, _ := e["details"].(map[string]any); d["field"] != "page_token" || !strings.Contains(fmt.Sprint(e["message"]), c.want) {
				t.Errorf("error = %v, want one on page_token saying %q", e, c.want)
			}
		})
	}
}
