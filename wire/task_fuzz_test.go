package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// submitSeeds are request bodies both submit fuzzers start from; the
// msgpack fuzzer adds their msgpack encodings and the hostile msgpack
// frames of testdata/fuzz/FuzzSubmitRequestMsgpack.
var submitSeeds = []string{
	`{"task_type":"echo","payload":{"a":1,"b":[true,null,"x"],"c":{"d":1.5}}}`,
	`{"task_type":"echo","payload_json":"{\"a\":1}"}`,
	`{"task_type":"sleep","payload":{"ms":10},"ttl_seconds":30,"idempotency_key":"k-1","priority":"high"}`,
	`{"task_type":"echo","payload":{},"callback_url":"http://127.0.0.1:9/cb","target":"agent-2"}`,
	`{"task_type":"echo","payload":{"big":18446744073709551615,"neg":-9223372036854775808,"f":1e300}}`,
	`{"task_type":"echo","payload":{"s":"<&>\u00e9\u2028"}}`,
	`{"task_type":"echo","payload":[1]}`,
	`{"task_type":"","payload":{}}`,
	`{"task_type":"echo","payload":{},"payload_json":"{}"}`,
	`{"task_type":"echo","priority":"now"}`,
	`{"task_type":5}`,
	`{"task_type":"echo","payload":{"a":`,
}

func FuzzSubmitRequestJSON(f *testing.F) {
	for _, s := range submitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		submitRoundTrip(t, wire.JSON, in)
	})
}

func FuzzSubmitRequestMsgpack(f *testing.F) {
	for _, s := range submitSeeds {
		var req wire.SubmitRequest
		if err := wire.JSON.Unmarshal([]byte(s), &req); err != nil {
			continue
		}
		b, err := wire.Msgpack.Marshal(&req)
		if err != nil {
			f.Fatalf("seed %s: %v", s, err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		submitRoundTrip(t, wire.Msgpack, in)
	})
}

// submitRoundTrip decodes in, normalizes it, and checks that an accepted
// request survives encoding and decoding with the same codec: the second
// decoding normalizes to an equal request, and a third pass changes nothing.
func submitRoundTrip(t *testing.T, c wire.Codec, in []byte) {
	var req wire.SubmitRequest
	if err := c.Unmarshal(in, &req); err != nil {
		return
	}
	if err := req.Normalize(); err != nil {
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams {
			t.Fatalf("Normalize error %v is not an invalid_params *wire.Error", err)
		}
		return
	}
	if req.PayloadJSON != "" || !req.Payload.IsObject() {
		t.Fatalf("normalized request has payload_json %q, payload %q", req.PayloadJSON, req.Payload)
	}
	again := reencodeSubmit(t, c, &req)
	if !sameSubmit(t, &req, again) {
		t.Fatalf("round trip changed the request:\n first %+v\nsecond %+v", req, *again)
	}
	third := reencodeSubmit(t, c, again)
	if !reflect.DeepEqual(again, third) {
		t.Fatalf("second round trip changed the request:\nsecond %+v\n third %+v", *again, *third)
	}
}

func reencodeSubmit(t *testing.T, c wire.Codec, req *wire.SubmitRequest) *wire.SubmitRequest {
	t.Helper()
	b, err := c.Marshal(req)
	if err != nil {
		t.Fatalf("encode accepted request %+v: %v", *req, err)
	}
	var out wire.SubmitRequest
	if err := c.Unmarshal(b, &out); err != nil {
		t.Fatalf("decode re-encoded request %q: %v", b, err)
	}
	if err := out.Normalize(); err != nil {
		t.Fatalf("re-encoded request %q no longer normalizes: %v", b, err)
	}
	return &out
}

// sameSubmit compares every field, payloads as JSON values with numbers
// kept exact.
func sameSubmit(t *testing.T, a, b *wire.SubmitRequest) bool {
	t.Helper()
	x, y := *a, *b
	x.Payload, y.Payload = nil, nil
	if !reflect.DeepEqual(x, y) {
		return false
	}
	return reflect.DeepEqual(exactJSON(t, a.Payload), exactJSON(t, b.Payload))
}

func exactJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("payload %q is not JSON: %v", b, err)
	}
	return v
}
