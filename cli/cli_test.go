package cli_test

import (
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
)

// verbs is the command line surface: every command and verb with --help.
var verbs = []string{
	"task submit", "task get", "task list", "task cancel", "task watch", "task info",
	"token create", "token list", "token revoke",
	"db check", "db backup",
	"version",
}

func TestVerbHelp(t *testing.T) {
	for _, v := range verbs {
		for _, flag := range []string{"--help", "-h"} {
			t.Run(v+" "+flag, func(t *testing.T) {
				args := append(strings.Fields(v), flag)
				code, out, errOut := clitest.Run(t, "", args...)
				if code != cli.ExitOK {
					t.Fatalf("exit code = %d, want 0; stderr:\n%s", code, errOut)
				}
				if errOut != "" {
					t.Errorf("stderr = %q, want empty", errOut)
				}
				if want := "Usage: synapse " + v; !strings.HasPrefix(out, want) {
					t.Errorf("stdout starts %q, want %q", clitest.FirstLine(out), want)
				}
				if !strings.Contains(out, "\nExamples:\n  synapse "+v) {
					t.Errorf("stdout has no example of %q:\n%s", v, out)
				}
			})
		}
		t.Run("help "+v, func(t *testing.T) {
			_, viaFlag, _ := clitest.Run(t, "", append(strings.Fields(v), "--help")...)
			code, out, errOut := clitest.Run(t, "", append([]string{"help"}, strings.Fields(v)...)...)
			if code != cli.ExitOK || out != viaFlag {
				t.Errorf("synapse help %s: exit %d, stdout %q, stderr %q; want exit 0 and the --help text", v, code, out, errOut)
			}
		})
	}
}

func TestAgentFlagsInHelp(t *testing.T) {
	_, out, _ := clitest.Run(t, "", "task", "list", "--help")
	for _, want := range []string{"--agent URL", "--token TOKEN", "--data DIR", "--json", "--timeout", "--status STATE", "--all"} {
		if !strings.Contains(out, want) {
			t.Errorf("task list --help lacks %q:\n%s", want, out)
		}
	}
	_, out, _ = clitest.Run(t, "", "version", "--help")
	if strings.Contains(out, "--agent") {
		t.Errorf("version --help lists agent flags:\n%s", out)
	}
}

func TestCommandHelp(t *testing.T) {
	for _, c := range []struct{ cmd, verbs string }{
		{"task", "submit get list cancel watch info"},
		{"token", "create list revoke"},
		{"db", "check backup"},
	} {
		for _, args := range [][]string{{c.cmd, "--help"}, {c.cmd, "-h"}, {c.cmd, "help"}, {"help", c.cmd}} {
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, out, _ := clitest.Run(t, "", args...)
				if code != cli.ExitOK {
					t.Fatalf("exit code = %d, want 0", code)
				}
				if want := "Usage: synapse " + c.cmd + " VERB"; !strings.HasPrefix(out, want) {
					t.Errorf("stdout starts %q, want %q", clitest.FirstLine(out), want)
				}
				for _, v := range strings.Fields(c.verbs) {
					if !strings.Contains(out, "\n  "+v+" ") {
						t.Errorf("usage lacks verb %q:\n%s", v, out)
					}
				}
			})
		}
	}
}

func TestMainUsage(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		toStdout bool
		wantText string
	}{
		{"no arguments", nil, cli.ExitUsage, false, "Usage:\n  synapse"},
		{"--help", []string{"--help"}, cli.ExitOK, true, "Usage:\n  synapse"},
		{"-h", []string{"-h"}, cli.ExitOK, true, "Usage:\n  synapse"},
		{"help", []string{"help"}, cli.ExitOK, true, "Commands:"},
		{"unknown command", []string{"frobnicate"}, cli.ExitUsage, false, `unknown command "frobnicate"`},
		{"unknown global flag", []string{"--frob", "task", "list"}, cli.ExitUsage, false, "flag provided but not defined: -frob"},
		{"help of unknown command", []string{"help", "frob"}, cli.ExitUsage, false, `unknown command "frob"`},
		{"help of unknown verb", []string{"help", "task", "frob"}, cli.ExitUsage, false, `unknown verb "frob"`},
		{"help with too many arguments", []string{"help", "task", "get", "x"}, cli.ExitUsage, false, "too many arguments"},
		{"missing verb", []string{"task"}, cli.ExitUsage, false, "missing verb"},
		{"unknown verb", []string{"token", "rotate"}, cli.ExitUsage, false, `unknown verb "rotate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := clitest.Run(t, "", tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			got, other := errOut, out
			if tt.toStdout {
				got, other = out, errOut
			}
			if !strings.Contains(got, tt.wantText) {
				t.Errorf("output lacks %q:\n%s", tt.wantText, got)
			}
			if other != "" {
				t.Errorf("the other stream is not empty: %q", other)
			}
		})
	}
}

func TestMainUsageListsCommands(t *testing.T) {
	_, out, _ := clitest.Run(t, "", "help")
	for _, c := range []string{"serve", "task", "token", "db", "version", "help"} {
		if !regexp.MustCompile(`(?m)^  ` + c + ` `).MatchString(out) {
			t.Errorf("main usage lacks command %q:\n%s", c, out)
		}
	}
}

func TestVersion(t *testing.T) {
	want := "synapse " + cli.Version + " " + runtime.GOOS + "/" + runtime.GOARCH + " " + runtime.Version() + "\n"
	for _, args := range [][]string{{"version"}, {"--version"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, _ := clitest.Run(t, "", args...)
			if code != cli.ExitOK || out != want {
				t.Errorf("exit %d, stdout %q; want 0 and %q", code, out, want)
			}
		})
	}
}

// TestUsageErrors checks that bad input is refused with exit code 2 before
// any request is made (the agent address is a closed port, so a request
// would give exit code 1 instead).
func TestUsageErrors(t *testing.T) {
	agent := clitest.ClosedAgent(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"get without id", []string{"task", "get"}, "missing argument: want TASK_ID"},
		{"get with two ids", []string{"task", "get", "a", "b"}, `unexpected argument "b"`},
		{"list with argument", []string{"task", "list", "x"}, `unexpected argument "x"`},
		{"list bad limit", []string{"task", "list", "--limit", "ten"}, "invalid value"},
		{"list zero limit", []string{"task", "list", "--limit", "0"}, "--limit 0: must be positive"},
		{"submit without type", []string{"task", "submit"}, "missing argument: want TYPE"},
		{"submit invalid JSON", []string{"task", "submit", "echo", "--payload", "{nope"}, "not valid JSON"},
		{"submit non-object", []string{"task", "submit", "echo", "--payload", "[1,2]"}, "must be a JSON object"},
		{"submit two payloads", []string{"task", "submit", "echo", "--payload", "{}", "--payload-file", "x.json"}, "give the payload once"},
		{"submit payload and stdin", []string{"task", "submit", "echo", "-", "--payload", "{}"}, "give the payload once"},
		{"submit extra argument", []string{"task", "submit", "echo", "more"}, `unexpected argument "more"`},
		{"submit wait too long", []string{"task", "submit", "echo", "--wait", "2m"}, "--wait 2m0s"},
		{"submit negative ttl", []string{"task", "submit", "echo", "--ttl", "-1"}, "--ttl -1"},
		{"submit stdin not JSON", []string{"task", "submit", "echo", "-"}, "not valid JSON"},
		{"info without fields", []string{"task", "info", "t1"}, "no fields given"},
		{"info bad pair", []string{"task", "info", "t1", "style"}, `argument "style": want FIELD=VALUE`},
		{"info bad fields", []string{"task", "info", "t1", "--fields", "[1]"}, "--fields is not a JSON object"},
		{"watch without id", []string{"task", "watch"}, "missing argument"},
		{"cancel without id", []string{"task", "cancel"}, "missing argument"},
		{"token create without name", []string{"token", "create"}, "missing argument: want NAME"},
		{"token revoke without id", []string{"token", "revoke"}, "missing argument"},
		{"backup without out", []string{"db", "backup"}, "--out FILE is required"},
		{"check with argument", []string{"db", "check", "now"}, `unexpected argument "now"`},
		{"bad agent scheme", []string{"task", "list", "--agent", "ftp://host"}, `bad --agent "ftp://host"`},
		{"negative timeout", []string{"task", "list", "--timeout", "-1s"}, "--timeout"},
		{"unknown flag", []string{"task", "list", "--colour"}, "flag provided but not defined"},
		{"flag after positional", []string{"task", "get", "t1", "--limit", "3"}, "flag provided but not defined: -limit"},
		{"version with argument", []string{"version", "x"}, `unexpected argument "x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--agent", agent)
			if tt.name == "bad agent scheme" {
				args = tt.args
			}
			if tt.name == "version with argument" {
				args = tt.args
			}
			code, out, errOut := clitest.Run(t, "not json", args...)
			clitest.WantUsage(t, code, out, errOut, tt.want)
		})
	}
}

func TestRuntimeErrorWithoutAgent(t *testing.T) {
	agent := clitest.ClosedAgent(t)
	tests := []struct {
		name string
		args []string
	}{
		{"get", []string{"task", "get", "t1"}},
		{"list", []string{"task", "list"}},
		{"submit from stdin", []string{"task", "submit", "echo", "-"}},
		{"watch", []string{"task", "watch", "t1"}},
		{"token list", []string{"token", "list"}},
		{"info after --", []string{"task", "info", "t1", "--", "-x=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The global flag goes before the command: it must carry over.
			args := append([]string{"--agent", agent}, tt.args...)
			code, out, errOut := clitest.Run(t, `{"msg":"hi"}`, args...)
			if code != cli.ExitFailure {
				t.Errorf("exit code = %d, want 1; stderr:\n%s", code, errOut)
			}
			if !strings.Contains(errOut, "hint: no agent answers at "+agent) {
				t.Errorf("stderr lacks the connection hint:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
		})
	}
}

func TestServeDispatch(t *testing.T) {
	// serve's own flags are its business; an unknown one must not be taken
	// for a global flag or a command.
	code, out, errOut := clitest.Run(t, "", "serve", "--no-such-flag")
	if code != cli.ExitUsage || !strings.Contains(errOut, "synapse serve: flag provided but not defined: -no-such-flag") || out != "" {
		t.Errorf("serve --no-such-flag: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and serve's message", code, out, errOut)
	}
	// Global flags before "serve" are handed to serve's parser.
	code, _, errOut = clitest.Run(t, "", "--json", "serve")
	if code != cli.ExitUsage || !strings.Contains(errOut, "synapse serve: flag provided but not defined: -json") {
		t.Errorf("synapse --json serve: exit %d, stderr:\n%s\nwant exit 2 from serve", code, errOut)
	}
	_, viaFlag, _ := clitest.Run(t, "", "serve", "--help")
	code, viaHelp, _ := clitest.Run(t, "", "help", "serve")
	if code != cli.ExitOK || !strings.HasPrefix(viaHelp, "Usage: synapse serve") || viaHelp != viaFlag {
		t.Errorf("synapse help serve: exit %d, %q; want serve's --help text", code, clitest.FirstLine(viaHelp))
	}
}
