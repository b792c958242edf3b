package a2a_test

import (
	"encoding/json"
	"testing"

	"github.com/synapse-edge/synapse/a2a"
	"github.com/synapse-edge/synapse/wire"
)

// FuzzSubmission: any message that decodes either gives a task type and a
// payload that is a JSON object within the agent's limits of shape, or an
// RPCError.
func FuzzSubmission(f *testing.F) {
	for _, s := range []string{
		`{"messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}`,
		`{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"a":[1,{"b":null}]}},{"text":"x"}],"metadata":{"task_type":"sleep"}}`,
		`{"parts":[{"kind":"file","file":{"uri":"x"}}]}`,
		`{"parts":[{"data":"nope"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m a2a.Message
		if json.Unmarshal(b, &m) != nil {
			return
		}
		tt, p, err := a2a.Submission(&m)
		if err != nil {
			if a2a.ErrorFrom(err).Code == a2a.CodeInternal {
				t.Fatalf("message %s: internal error %v", b, err)
			}
			return
		}
		if tt == "" || !json.Valid(p) || !wire.JSONValue(p).IsObject() {
			t.Fatalf("message %s: type %q payload %s", b, tt, p)
		}
	})
}
