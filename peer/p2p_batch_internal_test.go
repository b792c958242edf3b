package peer

import (
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestAcceptedJSON: Accepted's hand-written encoder writes what wire.JSON
// writes.
func TestAcceptedJSON(t *testing.T) {
	for _, acc := range []*Accepted{
		{Accepted: true, MessageID: "m\"1 <&>"},
		{Accepted: true, MessageID: "m2", Duplicate: true, Code: wire.CodeIDDuplicate},
	} {
		want, err := wire.JSON.Marshal(acc)
		if err != nil {
			t.Fatal(err)
		}
		if got := acc.appendJSON(nil); string(got) != string(want) {
			t.Errorf("%s\nwant\n%s", got, want)
		}
	}
}
