package transport_test

import (
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

func tperr(code wire.ErrorCode) *wire.Error { return wire.Errorf(code, "") }

func TestClassify(t *testing.T) {
	tests := []struct {
		name      string
		kind      transport.Kind
		a         transport.Answer
		want      transport.Class
		unreached bool
	}{
		{"200", transport.Envelope, transport.Answer{Status: 200}, transport.Delivered, false},
		{"202", transport.Envelope, transport.Answer{Status: 202}, transport.Delivered, false},
		{"200 duplicate", transport.Envelope, transport.Answer{Status: 200, Error: tperr(wire.CodeIDDuplicate)}, transport.Delivered, false},
		{"no answer", transport.Envelope, transport.Answer{}, transport.Retry, true},
		{"410 plain", transport.Envelope, transport.Answer{Status: 410}, transport.Permanent, false},
		{"410 webhook", transport.Callback, transport.Answer{Status: 410}, transport.Permanent, false},
		{"410 contract expired", transport.Envelope, transport.Answer{Status: 410, Error: tperr(wire.CodeNegContractExpired)}, transport.Negotiable, false},
		{"428 contract missing", transport.Envelope, transport.Answer{Status: 428, Error: tperr(wire.CodeNegContractMissing)}, transport.Negotiable, false},
		{"403 capability lacking", transport.Envelope, transport.Answer{Status: 403, Error: tperr(wire.CodeCapabilityLacking)}, transport.Negotiable, false},
		{"403 capability lacking batch", transport.Batch, transport.Answer{Status: 403, Error: tperr(wire.CodeCapabilityLacking)}, transport.Negotiable, false},
		{"401 approval pending", transport.Envelope, transport.Answer{Status: 401, Error: tperr(wire.CodePeerApprovalPending)}, transport.Retry, true},
		{"401 unknown sender", transport.Envelope, transport.Answer{Status: 401, Error: tperr(wire.CodeIDUnknownSender)}, transport.Retry, true},
		{"502 html", transport.Envelope, transport.Answer{Status: 502, Body: []byte("<html>bad gateway</html>")}, transport.Retry, true},
		{"503", transport.Batch, transport.Answer{Status: 503}, transport.Retry, true},
		{"504", transport.Callback, transport.Answer{Status: 504}, transport.Retry, true},
		{"408", transport.Envelope, transport.Answer{Status: 408}, transport.Retry, false},
		{"429 rate limited", transport.Envelope, transport.Answer{Status: 429, Error: tperr(wire.CodeRateLimited)}, transport.Retry, false},
		{"400 terminal", transport.Envelope, transport.Answer{Status: 400, Error: tperr(wire.CodeInvalidParams)}, transport.Permanent, false},
		{"400 no body", transport.Envelope, transport.Answer{Status: 400}, transport.Retry, false},
		{"409 retriable", transport.Envelope, transport.Answer{Status: 409, Error: tperr(wire.CodeIdempotencyInFlight)}, transport.Retry, false},
		{"404 terminal request", transport.Request, transport.Answer{Status: 404, Error: tperr(wire.CodeNotFound)}, transport.Permanent, false},
		{"400 webhook tperror", transport.Callback, transport.Answer{Status: 400, Error: tperr(wire.CodeInvalidParams)}, transport.Retry, false},
		{"403 webhook negotiable", transport.Callback, transport.Answer{Status: 403, Error: tperr(wire.CodeCapabilityLacking)}, transport.Retry, false},
		{"400 batch html", transport.Batch, transport.Answer{Status: 400, Body: []byte("<html>")}, transport.Permanent, false},
		{"413 batch", transport.Batch, transport.Answer{Status: 413}, transport.Permanent, false},
		{"403 batch permission", transport.Batch, transport.Answer{Status: 403, Error: tperr(wire.CodePermissionDenied)}, transport.Retry, false},
		{"500 negotiable", transport.Envelope, transport.Answer{Status: 500, Error: tperr(wire.CodeNegContractExpired)}, transport.Retry, false},
		{"500 terminal", transport.Envelope, transport.Answer{Status: 500, Error: tperr(wire.CodeExecutionFailed)}, transport.Retry, false},
		{"301", transport.Envelope, transport.Answer{Status: 301}, transport.Retry, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := transport.Classify(tt.kind, tt.a)
			if o.Class != tt.want || o.Unreached != tt.unreached {
				t.Errorf("Classify = %v (unreached %v), want %v (unreached %v)", o.Class, o.Unreached, tt.want, tt.unreached)
			}
			if got := o.Delivered(); got != (tt.want == transport.Delivered) {
				t.Errorf("Delivered() = %v", got)
			}
			if o.Class == transport.Delivered {
				if o.Err != nil || o.Error != nil {
					t.Errorf("delivered with Err %v, Error %v", o.Err, o.Error)
				}
				return
			}
			if !errors.Is(o.Err, transport.ErrNotDelivered) {
				t.Errorf("Err = %v, does not wrap ErrNotDelivered", o.Err)
			}
			if tt.a.Error != nil && !strings.Contains(o.Err.Error(), string(tt.a.Error.Code)) {
				t.Errorf("Err = %q, does not name %s", o.Err, tt.a.Error.Code)
			}
		})
	}
}

// Every code of the registry, answered with its own status by an agent,
// gets the class the registry gives it, with the documented exceptions.
func TestClassifyRegistry(t *testing.T) {
	for _, code := range wire.Codes() {
		e := tperr(code)
		d, _ := wire.Lookup(code)
		o := transport.Classify(transport.Envelope, transport.Answer{Status: d.Status, Error: e})
		var want transport.Class
		switch {
		case d.Status/100 == 2:
			want = transport.Delivered
		case d.Class == wire.Negotiable:
			want = transport.Negotiable
		case d.Status == 401: // may not have paired us yet
			want = transport.Retry
		case d.Class == wire.Retriable:
			want = transport.Retry
		case d.Status/100 == 5: // a server error: another attempt may succeed
			want = transport.Retry
		default:
			want = transport.Permanent
		}
		if o.Class != want {
			t.Errorf("%s (%d %s): %v, want %v", code, d.Status, d.Class, o.Class, want)
		}
	}
}

func TestClassifyRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		in, want time.Duration
	}{{0, 0}, {-time.Second, 0}, {90 * time.Second, 90 * time.Second}, {48 * time.Hour, transport.MaxRetryAfter}} {
		o := transport.Classify(transport.Envelope, transport.Answer{Status: 429, RetryAfter: tt.in})
		if o.RetryAfter != tt.want {
			t.Errorf("RetryAfter %v: got %v, want %v", tt.in, o.RetryAfter, tt.want)
		}
	}
	if o := transport.Classify(transport.Envelope, transport.Answer{Status: 200, RetryAfter: time.Minute}); o.RetryAfter != 0 {
		t.Errorf("delivered with RetryAfter %v", o.RetryAfter)
	}
}

func TestDecodeError(t *testing.T) {
	full, _ := wire.JSON.Marshal(wire.ErrorBody{Error: tperr(wire.CodeNegContractUnknown)})
	packed, _ := wire.Msgpack.Marshal(wire.ErrorBody{Error: tperr(wire.CodeRateLimited)})
	tests := []struct {
		name, body, ct string
		want           wire.ErrorCode // code; "" for nil
	}{
		{"json", string(full), "application/json", wire.CodeNegContractUnknown},
		{"json without type", string(full), "", wire.CodeNegContractUnknown},
		{"msgpack", string(packed), "application/msgpack", wire.CodeRateLimited},
		{"msgpack labelled json", string(packed), "application/json", ""},
		{"truncated", string(full[:len(full)/2]), "application/json", ""},
		{"html", "<html><body>502 Bad Gateway</body></html>", "text/html", ""},
		{"code in text", "upstream says capability_lacking", "text/plain", ""},
		{"null error", `{"error":null}`, "", ""},
		{"no code", `{"error":{"message":"x"}}`, "", ""},
		{"wrong types", `{"error":{"code":7,"message":[]}}`, "", ""},
		{"foreign json", `{"error":"quota exceeded"}`, "", ""},
		{"empty", "", "", ""},
		{"huge declared msgpack", "\x81\xa5error\xdf\xff\xff\xff\xff", "application/msgpack", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := transport.DecodeError([]byte(tt.body), tt.ct)
			var got wire.ErrorCode
			if e != nil {
				got = e.Code
			}
			if got != tt.want {
				t.Errorf("code %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	cause := errors.New("connection refused")
	o := transport.Unreachable(&url.Error{Op: "Post", URL: "http://h/hook?secret=s3cr3t", Err: cause})
	if o.Class != transport.Retry || !o.Unreached {
		t.Errorf("class %v unreached %v", o.Class, o.Unreached)
	}
	if !errors.Is(o.Err, cause) || !errors.Is(o.Err, transport.ErrNotDelivered) {
		t.Errorf("Err = %v, does not wrap the cause and ErrNotDelivered", o.Err)
	}
	if strings.Contains(o.Err.Error(), "s3cr3t") || !strings.Contains(o.Err.Error(), "connection refused") {
		t.Errorf("Err = %q", o.Err)
	}
	if r := transport.Refused(cause); r.Class != transport.Permanent || !errors.Is(r.Err, transport.ErrNotDelivered) {
		t.Errorf("Refused = %+v", r)
	}
}
