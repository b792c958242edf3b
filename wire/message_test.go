package wire_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestSendMessageRequest: what SendMessage accepts (seed 003 §4.2) and
// the field each refusal names.
func TestSendMessageRequest(t *testing.T) {
	for _, tt := range []struct {
		name  string
		req   wire.SendMessageRequest
		field string // "" accepted
	}{
		{"json", wire.SendMessageRequest{ReceiverID: "b", ContentType: "json", PayloadJSON: `{"a":[1,2]}`, CorrelationID: "c", ConversationID: "v"}, ""},
		{"text", wire.SendMessageRequest{ReceiverID: "b", ContentType: "text", PayloadJSON: `"hi"`}, ""},
		{"code", wire.SendMessageRequest{ReceiverID: "b", ContentType: "code", PayloadJSON: `{"lang":"go","src":"package x"}`}, ""},
		{"file", wire.SendMessageRequest{ReceiverID: "b", ContentType: "file", PayloadJSON: `{"name":"a.txt"}`}, ""},
		{"no receiver", wire.SendMessageRequest{ContentType: "text", PayloadJSON: `"hi"`}, "receiver_id"},
		{"unknown content type", wire.SendMessageRequest{ReceiverID: "b", ContentType: "video", PayloadJSON: `"hi"`}, "content_type"},
		{"no content type", wire.SendMessageRequest{ReceiverID: "b", PayloadJSON: `"hi"`}, "content_type"},
		{"no payload", wire.SendMessageRequest{ReceiverID: "b", ContentType: "json"}, "payload_json"},
		{"payload not JSON", wire.SendMessageRequest{ReceiverID: "b", ContentType: "text", PayloadJSON: `hi`}, "payload_json"},
		{"payload invalid UTF-8", wire.SendMessageRequest{ReceiverID: "b", ContentType: "text", PayloadJSON: "\"\xff\""}, "payload_json"},
		{"payload nested too deep", wire.SendMessageRequest{ReceiverID: "b", ContentType: "json", PayloadJSON: strings.Repeat("[", 40) + strings.Repeat("]", 40)}, "payload_json"},
		{"payload number out of range", wire.SendMessageRequest{ReceiverID: "b", ContentType: "json", PayloadJSON: "1e400"}, "payload_json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := tt.req.Message()
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Message: %v", err)
				}
				if pl.ContentType != tt.req.ContentType || string(pl.Payload) != tt.req.PayloadJSON || pl.ConversationID != tt.req.ConversationID || pl.Check() != nil {
					t.Errorf("payload %+v of %+v", pl, tt.req)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams || we.Details["field"] != tt.field {
				t.Errorf("Message = %v, want invalid_params naming %s", err, tt.field)
			}
		})
	}
}

// FuzzSendMessageRequest: any JSON body is refused with invalid_params or
// becomes a payload that survives the outbox's JSON encoding and a
// msgpack round trip, and that the receiver's Check accepts.
func FuzzSendMessageRequest(f *testing.F) {
	for _, s := range []string{
		`{"receiver_id":"b","content_type":"json","payload_json":"{\"a\":1}","correlation_id":"c","conversation_id":"v"}`,
		`{"receiver_id":"b","content_type":"text","payload_json":"\"hello\""}`,
		`{"receiver_id":"b","content_type":"code","payload_json":"[1,2.5,null,true]"}`,
		`{"receiver_id":"b","content_type":"file","payload_json":"18446744073709551615"}`,
		`{"receiver_id":"","content_type":"text","payload_json":"\"x\""}`,
		`{"receiver_id":"b","content_type":"video","payload_json":"1"}`,
		`{"receiver_id":"b","content_type":"json","payload_json":"{"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var req wire.SendMessageRequest
		if err := wire.JSON.Unmarshal(in, &req); err != nil {
			return
		}
		pl, err := req.Message()
		if err != nil {
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams {
				t.Fatalf("Message error %v is not invalid_params", err)
			}
			return
		}
		raw, err := wire.NewJSONPayload(pl) // as the outbox encodes it
		if err != nil {
			t.Fatalf("encode %+v: %v", pl, err)
		}
		var got wire.MessagePayload
		if err := raw.Decode(&got); err != nil || got.Check() != nil {
			t.Fatalf("decode %s: %v, check %v", raw.Bytes(), err, got.Check())
		}
		if got.ContentType != pl.ContentType || got.ConversationID != pl.ConversationID || !jsonSame(t, got.Payload, []byte(req.PayloadJSON)) {
			t.Fatalf("received %+v, sent %+v", got, pl)
		}
		mp, err := wire.Msgpack.Marshal(&got)
		if err != nil {
			t.Fatalf("msgpack %+v: %v", got, err)
		}
		// msgpack keeps the value (an integer past uint64 becomes a float,
		// as in task payloads): a second round trip changes nothing.
		var back wire.MessagePayload
		if err := wire.Msgpack.Unmarshal(mp, &back); err != nil || back.Check() != nil || back.ContentType != got.ContentType {
			t.Fatalf("msgpack round trip of %+v: %+v, %v", got, back, err)
		}
		mp2, err := wire.Msgpack.Marshal(&back)
		if err != nil || !bytes.Equal(mp, mp2) {
			t.Fatalf("msgpack of %+v changed on a second round trip: %v", got, err)
		}
	})
}

// jsonSame reports whether two JSON texts hold the same value (numbers
// compared as text, as JSONValue keeps them).
func jsonSame(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}
