package wire_test

import (
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestJSONNoHTMLEscape: answers keep <, > and & as they are.
func TestJSONNoHTMLEscape(t *testing.T) {
	got, err := wire.JSON.Marshal(map[string]string{"message": "send Authorization: Bearer <token> & retry"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"message":"send Authorization: Bearer <token> & retry"}`; string(got) != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
