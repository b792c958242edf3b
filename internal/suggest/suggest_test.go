package suggest_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/suggest"
)

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"echo", "echo", 0}, {"ecoh", "echo", 1}, {"eho", "echo", 1},
		{"echoo", "echo", 1}, {"sleep", "slept", 2}, {"kitten", "sitting", 3},
		{strings.Repeat("a", 65), "a", 64},
	} {
		if got := suggest.Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	names := []string{"echo", "resize", "sleep"}
	for _, c := range []struct{ name, want string }{
		{"ecoh", "echo"}, {"Sleeep", "sleep"}, {"RESIZE", "resize"}, {"resize_image", ""}, {"", ""},
	} {
		if got := suggest.Closest(c.name, names); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

func TestDidYouMean(t *testing.T) {
	for _, c := range []struct{ best, want string }{
		{"", ""}, {"echo", `; did you mean "echo"?`}, {`a"b`, `; did you mean "a\"b"?`},
	} {
		if got := suggest.DidYouMean(c.best); got != c.want {
			t.Errorf("DidYouMean(%q) = %q, want %q", c.best, got, c.want)
		}
	}
}
