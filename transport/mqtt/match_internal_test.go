package mqtt

import "testing"

func TestMatchTopic(t *testing.T) {
	for _, tc := range []struct {
		filter, topic string
		want          bool
	}{
		{"a/b/c", "a/b/c", true},
		{"a/b/c", "a/b", false},
		{"a/b", "a/b/c", false},
		{"a/+/c", "a/x/c", true},
		{"a/+/c", "a/x/y", false},
		{"a/#", "a", true},
		{"a/#", "a/b/c", true},
		{"#", "a/b", true},
		{"+", "a", true},
		{"+", "a/b", false},
		{"synapse/agents/gw-a/inbox", "synapse/agents/gw-b/inbox", false},
		{"synapse/agents/gw-a/inbox", "synapse/agents/gw-a/inbox", true},
	} {
		if got := matchTopic(tc.filter, tc.topic); got != tc.want {
			t.Errorf("matchTopic(%q, %q) = %v, want %v", tc.filter, tc.topic, got, tc.want)
		}
	}
}
