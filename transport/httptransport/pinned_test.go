package httptransport_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/synapse-edge/synapse/internal/tlspin"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/transport/httptransport"
)

// TestPinnedTLS sends to a real https server whose certificate no CA of
// the transport vouches for: without a pin it is refused as unknown,
// under its own fingerprint it is delivered, under another one it is
// refused as a mismatch, retriable, and a pin fixed afterwards reaches it
// again on a fresh connection.
func TestPinnedTLS(t *testing.T) {
	var hits int
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusAccepted)
	}))
	t.Cleanup(srv.Close)
	good := tlspin.Fingerprint(srv.Certificate())
	other := tlspin.Sum([]byte("another certificate"))
	tr := httptransport.New(httptransport.Options{})
	defer tr.Close()
	ctx := context.Background()
	send := func(pin string) transport.Outcome {
		return tr.Send(ctx, &transport.Message{Kind: transport.Envelope, To: srv.URL, Body: []byte(`{}`), TLSPin: pin})
	}

	t.Run("no pin", func(t *testing.T) {
		o := send("")
		if o.Delivered() || errors.Is(o.Err, tlspin.ErrMismatch) {
			t.Fatalf("unpinned send to a self-signed server: %+v; want an unknown-authority failure", o)
		}
	})
	t.Run("pinned", func(t *testing.T) {
		if o := send(good); !o.Delivered() {
			t.Fatalf("send under the server's own fingerprint: %+v", o)
		}
	})
	t.Run("other pin", func(t *testing.T) {
		before := hits
		o := send(other)
		if o.Delivered() || o.Class != transport.Retry || !o.Unreached {
			t.Fatalf("send under another fingerprint: %+v; want retriable, unreached", o)
		}
		var mm *tlspin.MismatchError
		if !errors.As(o.Err, &mm) || mm.Got != good || mm.Pinned != other {
			t.Fatalf("error %v; want a MismatchError got %s pinned %s", o.Err, good, other)
		}
		if hits != before {
			t.Errorf("the server got %d requests under the wrong pin", hits-before)
		}
	})
	t.Run("pinned again", func(t *testing.T) {
		if o := send(good); !o.Delivered() {
			t.Fatalf("send under the right fingerprint after a mismatch: %+v", o)
		}
	})
}
