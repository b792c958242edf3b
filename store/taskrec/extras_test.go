package taskrec

import (
	"encoding/json"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestAppendExtras: appendExtras writes what encoding/json writes.
func TestAppendExtras(t *testing.T) {
	for _, tc := range []struct {
		name string
		x    extras
	}{
		{"origin", extras{Origin: &wire.TaskOrigin{Peer: "edge_a", MessageID: "0194a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"}}},
		{"origin without message id", extras{Origin: &wire.TaskOrigin{Peer: "edge_a"}}},
		{"origin to escape", extras{Origin: &wire.TaskOrigin{Peer: "a<b>&\"c\"\u2028\xff", MessageID: "\n"}}},
		{"origin and missing fields", extras{Origin: &wire.TaskOrigin{Peer: "p"}, MissingFields: []wire.MissingField{{Field: "f", Reason: "r"}}}},
		{"human", extras{Human: &wire.TaskNeedHumanPayload{TaskID: "t"}}},
		{"nothing", extras{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.x)
			if err != nil {
				t.Fatal(err)
			}
			got, err := appendExtras([]byte("x"), tc.x)
			if err != nil || string(got) != "x"+string(want) {
				t.Fatalf("got %s (%v), want %s", got[1:], err, want)
			}
		})
	}
}
