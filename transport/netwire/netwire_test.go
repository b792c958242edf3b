package netwire_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/netwire"
)

// TestWires: http goes through the HTTP wire, a callback through the
// guard, ws to the WebSocket wire, and a scheme with no wire is refused
// with an error that names it.
func TestWires(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.URL.Path)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer srv.Close()
	guarded := 0
	mux := netwire.New(netwire.Options{Guard: func(ctx context.Context, network, addr string) (net.Conn, error) {
		guarded++
		return nil, errors.New("refused by the test's guard")
	}})
	defer mux.Close()
	ctx := context.Background()
	if o := mux.Send(ctx, &transport.Message{Kind: transport.Envelope, To: srv.URL + "/p2p", Body: []byte("{}")}); !o.Delivered() {
		t.Fatalf("http: %v %v", o.Class, o.Err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], "/p2p") {
		t.Errorf("the server got %q", got)
	}
	if o := mux.Send(ctx, &transport.Message{Kind: transport.Callback, To: srv.URL + "/hook", Body: []byte("{}")}); o.Delivered() || guarded != 1 {
		t.Errorf("callback: %v, the guard dialed %d times (want refused, 1)", o.Class, guarded)
	}
	// ws to a closed port: the WebSocket wire's unreached, not a refusal.
	if o := mux.Send(ctx, &transport.Message{Kind: transport.Batch, To: "ws://127.0.0.1:1/tier1", Body: []byte{0x90}}); o.Class != transport.Retry || !o.Unreached {
		t.Errorf("ws to a closed port: %v unreached %v (%v)", o.Class, o.Unreached, o.Err)
	}
	o := mux.Send(ctx, &transport.Message{Kind: transport.Envelope, To: "mqtt://broker:1883"})
	if o.Class != transport.Permanent || o.Err == nil || !strings.Contains(o.Err.Error(), `"mqtt"`) {
		t.Errorf("mqtt with no wire: %v %v", o.Class, o.Err)
	}
}
