package peer

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/wire"
)

func TestDiscloseResult(t *testing.T) {
	rules := []agent.DisclosureRule{{Peer: "a", Fields: []string{"x", "y"}}, {Peer: "*", Fields: []string{"y"}}, {Peer: "c", Fields: []string{"*"}}}
	res := wire.JSONValue(`{"x":1,"y":{"k":2},"z":"secret"}`)
	for _, tc := range []struct {
		peer, result, out, sent, held string
	}{
		{peer: "a", result: string(res), out: `{"x":1,"y":{"k":2}}`, sent: "x,y", held: "z"},
		{peer: "b", result: string(res), out: `{"y":{"k":2}}`, sent: "y", held: "x,z"},
		{peer: "c", result: string(res), out: string(res), sent: "x,y,z", held: ""},
		{peer: "a", result: `"a string"`, out: `null`, sent: "", held: "*"},
		{peer: "c", result: `[1,2]`, out: `[1,2]`, sent: "*", held: ""},
		{peer: "a", result: `null`, out: `null`, sent: "", held: ""},
	} {
		out, sent, held, err := discloseResult(rules, tc.peer, wire.JSONValue(tc.result))
		if err != nil {
			t.Fatalf("%s %s: %v", tc.peer, tc.result, err)
		}
		if string(out) != tc.out || strings.Join(sent, ",") != tc.sent || strings.Join(held, ",") != tc.held {
			t.Errorf("%s %s: %s sent %v withheld %v, want %s sent %s withheld %s", tc.peer, tc.result, out, sent, held, tc.out, tc.sent, tc.held)
		}
	}
	// No rule for the peer and no "*": nothing is sent.
	out, sent, held, _ := discloseResult(rules[:1], "b", res)
	if string(out) != `{}` || len(sent) != 0 || strings.Join(held, ",") != "x,y,z" {
		t.Errorf("unnamed peer: %s sent %v withheld %v, want {} and all withheld", out, sent, held)
	}
}
