package httpapi

import (
	"bytes"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestInternalErrorJSON: the answer written when an error cannot be
// encoded is the codec's own encoding of an internal error.
func TestInternalErrorJSON(t *testing.T) {
	want, err := wire.JSON.Marshal(wire.ErrorBody{Error: wire.Errorf(wire.CodeInternal, "internal error")})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(want), internalErrorJSON) {
		t.Errorf("internalErrorJSON is %s, the codec writes %s", internalErrorJSON, want)
	}
}
