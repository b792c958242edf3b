package command

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
			fs := NewFlagSet("t")
			name := fs.String("name", "", "")
			js := fs.Bool("json", false, "")
			pos, err := ParseInterspersed(fs, tt.args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pos, tt.wantPos) || *name != tt.wantName || *js != tt.wantJSON {
				t.Errorf("got pos %q name %q json %v, want %q %q %v", pos, *name, *js, tt.wantPos, tt.wantName, tt.wantJSON)
			}
		})
	}
	t.Run("unknown flag after positional", func(t *testing.T) {
		fs := NewFlagSet("t")
		if _, err := ParseInterspersed(fs, []string{"a", "--nope"}); err == nil {
			t.Error("no error for an unknown flag")
		}
	})
}

func TestTokenResolution(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, TokenFile), []byte("  from-file\n"), 0o600); err != nil {
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
		{"token file last", "", nil, dir, "from-file", filepath.Join(dir, TokenFile)},
		{"nothing", "", nil, t.TempDir(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewSession(&IO{}, func(k string) string { return tt.env[k] }, "test")
			s.Flags.Token, s.Flags.Data = tt.flag, tt.data
			got, from := s.Token()
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
		g := Globals{Agent: tt.in}
		err := g.validate()
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("validate(%q) error = %v, want %q", tt.in, err, tt.err)
		case tt.err == "" && (err != nil || g.Agent != tt.want):
			t.Errorf("validate(%q) = %q, %v; want %q", tt.in, g.Agent, err, tt.want)
		}
	}
}

func TestEnvAgentDefault(t *testing.T) {
	s := NewSession(&IO{}, func(k string) string {
		if k == "SYNAPSE_AGENT" {
			return "http://127.0.0.1:9999"
		}
		return ""
	}, "test")
	if got, want := s.Flags.Agent, "http://127.0.0.1:9999"; got != want {
		t.Errorf("agent = %q, want %q", got, want)
	}
}
