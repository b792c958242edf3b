package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantPos  []string
		wantName string
		wantJSON bool
	}{
		{"flags first", []string{"--name", "n", "a", "b"}, []string{"a", "b"}, "n", false},
		{"flags after", []string{"a", "--name", "n", "b", "--json"}, []string{"a", "b"}, "n", true},
		{"dash is positional", []string{"a", "-", "--json"}, []string{"a", "-"}, "", true},
		{"double dash ends flags", []string{"a", "--", "--json", "-x"}, []string{"a", "--json", "-x"}, "", false},
		{"double dash first", []string{"--", "--name"}, []string{"--name"}, "", false},
		{"equals form", []string{"--name=v", "a"}, []string{"a"}, "v", false},
		{"none", nil, nil, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlagSet("t")
			name := fs.String("name", "", "")
			js := fs.Bool("json", false, "")
			pos, err := parseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pos, tt.wantPos) || *name != tt.wantName || *js != tt.wantJSON {
				t.Errorf("got pos %q name %q json %v, want %q %q %v", pos, *name, *js, tt.wantPos, tt.wantName, tt.wantJSON)
			}
		})
	}
	t.Run("unknown flag after positional", func(t *testing.T) {
		fs := newFlagSet("t")
		if _, err := parseInterspersed(fs, []string{"a", "--nope"}); err == nil {
			t.Error("no error for an unknown flag")
		}
	})
}

func TestParseFields(t *testing.T) {
	got, err := parseFields(`{"a":1,"b":"x"}`, []string{"b=2", "c=hello", `d={"k":[1]}`, "e=", `f="7"`})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"a": float64(1), "b": float64(2), "c": "hello", "d": map[string]any{"k": []any{float64(1)}}, "e": "", "f": "7"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v, want %#v", got, want)
	}
}

func TestTokenResolution(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, tokenFile), []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		flag       string
		env        map[string]string
		data       string
		want, from string
	}{
		{"flag wins", "from-flag", map[string]string{"SYNAPSE_TOKEN": "e1", "SYNAPSE_ADMIN_TOKEN": "e2"}, dir, "from-flag", "--token"},
		{"SYNAPSE_TOKEN next", "", map[string]string{"SYNAPSE_TOKEN": "e1", "SYNAPSE_ADMIN_TOKEN": "e2"}, dir, "e1", "SYNAPSE_TOKEN"},
		{"SYNAPSE_ADMIN_TOKEN next", "", map[string]string{"SYNAPSE_ADMIN_TOKEN": "e2"}, dir, "e2", "SYNAPSE_ADMIN_TOKEN"},
		{"token file last", "", nil, dir, "from-file", filepath.Join(dir, tokenFile)},
		{"nothing", "", nil, t.TempDir(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(&IO{}, func(k string) string { return tt.env[k] })
			s.g.token, s.g.data = tt.flag, tt.data
			got, from := s.token()
			if got != tt.want || from != tt.from {
				t.Errorf("token() = %q from %q, want %q from %q", got, from, tt.want, tt.from)
			}
		})
	}
}

func TestAgentAddress(t *testing.T) {
	tests := []struct{ in, want, err string }{
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080", ""},
		{"127.0.0.1:9000", "http://127.0.0.1:9000", ""},
		{"https://[::1]:8443/", "https://[::1]:8443", ""},
		{"ftp://h", "", "bad --agent"},
		{"http://", "", "bad --agent"},
	}
	for _, tt := range tests {
		g := globals{agent: tt.in}
		err := g.validate()
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("validate(%q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || g.agent != tt.want):
			t.Errorf("validate(%q) = %q, %v; want %q", tt.in, g.agent, err, tt.want)
		}
	}
}

func TestEnvAgentDefault(t *testing.T) {
	s := newSession(&IO{}, func(k string) string {
		if k == "SYNAPSE_AGENT" {
			return "http://127.0.0.1:9999"
		}
		return ""
	})
	if got, want := s.g.agent, "http://127.0.0.1:9999"; got != want {
		t.Errorf("agent = %q, want %q", got, want)
	}
}
