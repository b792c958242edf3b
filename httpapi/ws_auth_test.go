package httpapi_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/fasthttp/websocket"

	"github.com/synapse-edge/synapse/httpapi"
)

// wsBearerProtocol is the subprotocol that carries token.
func wsBearerProtocol(token string) string {
	return httpapi.WSBearerPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

// TestWebSocketBearerSubprotocol: a WebSocket client that cannot set
// Authorization (a browser) offers the token as a subprotocol; the server
// accepts it, answers Sec-WebSocket-Protocol: synapse (never the token's
// entry), and refuses a wrong token, a malformed one, and a token in the
// URL.
func TestWebSocketBearerSubprotocol(t *testing.T) {
	ts := startServer(t)
	wsURL := "ws" + strings.TrimPrefix(ts.base, "http") + api("/tier1/stream")
	for _, tc := range []struct {
		name      string
		url       string
		protocols []string
		status    int    // of a refused handshake; 0: accepted
		chosen    string // the subprotocol the server answers
	}{
		{"token with the synapse protocol", wsURL, []string{httpapi.WSProtocol, wsBearerProtocol(adminToken)}, 0, "synapse"},
		{"token first", wsURL, []string{wsBearerProtocol(adminToken), httpapi.WSProtocol}, 0, "synapse"},
		{"token alone", wsURL, []string{wsBearerProtocol(adminToken)}, 0, ""},
		{"wrong token", wsURL, []string{httpapi.WSProtocol, wsBearerProtocol("syn_wrong")}, http.StatusUnauthorized, ""},
		{"not base64url", wsURL, []string{httpapi.WSProtocol, httpapi.WSBearerPrefix + "a+b/c"}, http.StatusUnauthorized, ""},
		{"token in the URL", wsURL + "?access_token=" + adminToken + "&token=" + adminToken, []string{httpapi.WSProtocol}, http.StatusUnauthorized, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := websocket.Dialer{Subprotocols: tc.protocols, HandshakeTimeout: pollTimeout}
			c, resp, err := d.Dial(tc.url, nil)
			if tc.status != 0 {
				if err == nil {
					c.Close()
					t.Fatalf("handshake accepted, want %d", tc.status)
				}
				if resp == nil || resp.StatusCode != tc.status {
					t.Fatalf("handshake: %v (%v), want %d", err, resp, tc.status)
				}
				return
			}
			if err != nil {
				t.Fatalf("handshake: %v (%v)", err, resp)
			}
			defer c.Close()
			if got := resp.Header.Values("Sec-WebSocket-Protocol"); strings.Join(got, ",") != tc.chosen {
				t.Errorf("Sec-WebSocket-Protocol %q, want %q", got, tc.chosen)
			}
			if c.Subprotocol() != tc.chosen {
				t.Errorf("subprotocol %q, want %q", c.Subprotocol(), tc.chosen)
			}
		})
	}
}

// TestWebSocketBearerBrowser: headless Chromium opens a WebSocket from the
// console's page with the token as a subprotocol, the way a browser
// application does; it opens with protocol "synapse", and a wrong token
// does not open.
func TestWebSocketBearerBrowser(t *testing.T) {
	bin := chromiumPath(t)
	ts := startServer(t)
	br := startBrowser(t, bin)
	br.call("Runtime.enable", nil)
	br.call("Page.enable", nil)
	br.call("Page.navigate", map[string]any{"url": ts.base + "/"})
	br.waitJS("the page", `document.readyState === "complete"`)
	open := func(token string) (r struct {
		Open     bool
		Protocol string
	}) {
		br.eval(`new Promise((done) => {
			const ws = new WebSocket(location.origin.replace(/^http/, "ws") + `+jsString(api("/tier1/stream"))+`,
				[`+jsString(httpapi.WSProtocol)+`, `+jsString(wsBearerProtocol(token))+`]);
			ws.onopen = () => { done({Open: true, Protocol: ws.protocol}); ws.close(); };
			ws.onerror = () => done({Open: false, Protocol: ""});
		})`, &r)
		return r
	}
	if r := open(adminToken); !r.Open || r.Protocol != "synapse" {
		t.Errorf("with the token: open %v, protocol %q; want open with synapse", r.Open, r.Protocol)
	}
	if r := open("syn_wrong"); r.Open {
		t.Errorf("a wrong token opened the WebSocket (protocol %q)", r.Protocol)
	}
}
