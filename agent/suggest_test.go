package agent_test

import (
	"context"
	"github.com/synapse-edge/synapse/agent"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

// TestUnknownTaskTypeSuggests: a misspelled task type is refused with the
// closest type and the list of types; a far one gets the list only.
func TestUnknownTaskTypeSuggests(t *testing.T) {
	a := openAgent(t, testConfig(t), nil)
	for _, c := range []struct{ typ, suggestion string }{{"ecoh", "echo"}, {"Sleeep", "sleep"}, {"resize_image", ""}} {
		t.Run(c.typ, func(t *testing.T) {
			_, err := a.Submit(context.Background(), admin, &wire.SubmitRequest{TaskType: c.typ, Payload: wire.JSONValue(`{}`)}, agent.SubmitOptions{})
			we := wantCode(t, err, wire.CodeCapabilityLacking)
			if got, _ := we.Details["suggestion"].(string); got != c.suggestion {
				t.Errorf("suggestion = %q, want %q (%s)", got, c.suggestion, we.Message)
			}
			if c.suggestion != "" && !strings.Contains(we.Message, `did you mean "`+c.suggestion+`"?`) {
				t.Errorf("message %q lacks the suggestion", we.Message)
			}
			if !strings.Contains(we.Message, "echo, ") {
				t.Errorf("message %q does not list the task types", we.Message)
			}
		})
	}
}
