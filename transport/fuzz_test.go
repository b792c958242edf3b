package transport_test

import (
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// FuzzClassify: whatever a destination answers (status, body, content
// type), decoding and classifying it neither panics nor yields a class
// outside the four, a TPError without a code, or a delivery with an error.
func FuzzClassify(f *testing.F) {
	js, _ := wire.JSON.Marshal(wire.ErrorBody{Error: wire.Errorf(wire.CodeNegContractExpired, "")})
	mp, _ := wire.Msgpack.Marshal(wire.ErrorBody{Error: wire.Errorf(wire.CodeRateLimited, "")})
	f.Add(410, js, wire.ContentJSON, int64(0))
	f.Add(429, mp, wire.ContentMsgpack, int64(time.Minute))
	f.Add(502, []byte("<html>502</html>"), "text/html", int64(-1))
	f.Add(400, js[:len(js)/2], "", int64(1<<62))
	f.Add(200, []byte(`{"accepted":true}`), wire.ContentJSON, int64(0))
	f.Add(0, []byte{}, "", int64(0))
	f.Fuzz(func(t *testing.T, status int, body []byte, ct string, after int64) {
		e := transport.DecodeError(body, ct)
		if e != nil && e.Code == "" {
			t.Fatalf("a TPError without a code from %q", body)
		}
		for _, k := range []transport.Kind{transport.Envelope, transport.Callback, transport.Batch, transport.Request, transport.Fetch} {
			o := transport.Classify(k, transport.Answer{Status: status, Body: body, ContentType: ct, Error: e, RetryAfter: time.Duration(after)})
			switch o.Class {
			case transport.Delivered:
				if o.Err != nil || o.Error != nil {
					t.Fatalf("delivered with an error: %v %v", o.Err, o.Error)
				}
			case transport.Retry, transport.Negotiable, transport.Permanent:
				if o.Err == nil {
					t.Fatalf("%v without Err", o.Class)
				}
			default:
				t.Fatalf("class %d", o.Class)
			}
			if o.RetryAfter < 0 || o.RetryAfter > transport.MaxRetryAfter {
				t.Fatalf("RetryAfter %v", o.RetryAfter)
			}
		}
	})
}
