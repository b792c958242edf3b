package pins_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/internal/tlspin"
	"github.com/synapse-edge/synapse/peer/pins"
	"github.com/synapse-edge/synapse/wire"
)

func TestOf(t *testing.T) {
	var tb pins.Table
	if got := tb.Of("https://a:1"); got != (pins.Pin{}) {
		t.Fatalf("empty table: %v", got)
	}
	a := pins.Pin{Fingerprint: "aa", Peer: "a"}
	tb.Set(map[string]pins.Pin{"https://a:1": a, "https://b:2/base": {Fingerprint: "bb", Peer: "b"}})
	for _, tc := range []struct {
		to   string
		want string
	}{
		{"https://a:1", "aa"},
		{"https://a:1/api/v1/synapse/identity", "aa"},
		{"https://a:10", ""}, // another port is another endpoint
		{"https://a:1x/y", ""},
		{"https://b:2/base/api", "bb"},
		{"https://b:2/other", ""},
		{"http://a:1", ""},
	} {
		if got := tb.Of(tc.to).Fingerprint; got != tc.want {
			t.Errorf("Of(%q) = %q, want %q", tc.to, got, tc.want)
		}
	}
	if got := tb.Of("https://a:1"); got != a {
		t.Errorf("Of names %v, want %v", got, a)
	}
	tb.Set(map[string]pins.Pin{})
	if got := tb.Of("https://a:1"); got != (pins.Pin{}) {
		t.Errorf("after Set of none: %v", got)
	}
}

func TestOutcome(t *testing.T) {
	var tb pins.Table
	refusal := func(got string) error {
		return fmt.Errorf("send: %w", &tlspin.MismatchError{Got: got, Pinned: "p"})
	}
	steps := []struct {
		got  string
		news bool
	}{{"x", true}, {"x", false}, {"y", true}, {"y", false}}
	for i, s := range steps {
		mm, news := tb.Outcome("p", false, refusal(s.got))
		if mm == nil || mm.Got != s.got || news != s.news {
			t.Errorf("step %d: Outcome(p, %s) = %v, %v; want news %v", i, s.got, mm, news, s.news)
		}
	}
	if mm, news := tb.Outcome("p", false, errors.New("connection refused")); mm != nil || news {
		t.Errorf("another error: %v, %v", mm, news)
	}
	if _, news := tb.Outcome("p", false, refusal("y")); news {
		t.Error("an unrelated failure made the same refusal news again")
	}
	tb.Outcome("p", true, nil)
	if _, news := tb.Outcome("p", false, refusal("y")); !news {
		t.Error("a refusal after a delivery is not news")
	}
	if _, news := tb.Outcome("q", false, refusal("y")); !news {
		t.Error("the first refusal under another pin is not news")
	}
}

func TestCheck(t *testing.T) {
	fp := strings.Repeat("ab", 32)
	if got, err := pins.Check("https://a:1", strings.ToUpper(fp)); err != nil || got != fp {
		t.Errorf("Check = %q, %v; want %q", got, err, fp)
	}
	if got, err := pins.Check("http://a:1", ""); err != nil || got != "" {
		t.Errorf("Check of no fingerprint = %q, %v", got, err)
	}
	for _, tc := range []struct{ endpoint, fp, why string }{
		{"https://a:1", "zz", "64 hex digits"},
		{"http://a:1", fp, "https endpoint"},
		{"mqtt:///gw-7", fp, "https endpoint"},
	} {
		_, err := pins.Check(tc.endpoint, tc.fp)
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeInvalidParams || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Check(%q, %q) = %v; want invalid params naming %q", tc.endpoint, tc.fp, err, tc.why)
		}
	}
}
