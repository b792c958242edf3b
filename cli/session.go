package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/synapse-edge/synapse/client"
)

// Defaults of the global flags.
const (
	defaultAgent = "http://127.0.0.1:8080"
	defaultData  = "./data"
	// tokenFile is the admin token file in the data directory.
	tokenFile = "admin.token"
)

// session is the state of one command line run.
type session struct {
	io     *IO
	getenv func(string) string
	g      globals
	// other is the agent that answered at --agent when it is not the
	// agent of --data (db.go).
	other string
	// isTerm, when set (in tests), replaces the terminal check.
	isTerm func(io.Writer) bool
}

// globals are the flags shared by every command that talks to an agent.
type globals struct {
	agent   string
	token   string
	data    string
	json    bool
	timeout time.Duration
}

func newSession(sio *IO, getenv func(string) string) *session {
	s := &session{io: sio, getenv: getenv}
	s.g.agent = defaultAgent
	if a := getenv("SYNAPSE_AGENT"); a != "" {
		s.g.agent = a
	}
	s.g.data = defaultData
	return s
}

// register defines the global flags on fs with the current values as
// defaults, so that flags given before the command carry over;
// verbTimeout is the verb's own default for --timeout.
func (g *globals) register(fs *flag.FlagSet, verbTimeout time.Duration) {
	fs.StringVar(&g.agent, "agent", g.agent, "agent `URL` (env SYNAPSE_AGENT)")
	fs.StringVar(&g.token, "token", g.token,
		"bearer `TOKEN` (default: env SYNAPSE_TOKEN, else SYNAPSE_ADMIN_TOKEN, else DIR/admin.token)")
	fs.StringVar(&g.data, "data", g.data, "data `DIR` of the local agent (holds admin.token and synapse.db)")
	fs.BoolVar(&g.json, "json", g.json, "print JSON instead of text")
	def := g.timeout
	if def == 0 {
		def = verbTimeout
	}
	fs.DurationVar(&g.timeout, "timeout", def, "time limit for each request to the agent (0 means none)")
}

// validate checks the global flags and normalises --agent: an address
// without a scheme gets http://.
func (g *globals) validate() error {
	a := strings.TrimSpace(g.agent)
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	u, err := url.Parse(a)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad --agent %q: want http://HOST:PORT", g.agent)
	}
	g.agent = strings.TrimRight(u.String(), "/")
	if g.timeout < 0 {
		return fmt.Errorf("bad --timeout %s: must not be negative", g.timeout)
	}
	return nil
}

// token returns the bearer token to send and where it came from ("" when
// there is none): --token, SYNAPSE_TOKEN, SYNAPSE_ADMIN_TOKEN, then the
// admin.token file of the data directory.
func (s *session) token() (tok, source string) {
	if s.g.token != "" {
		return s.g.token, "--token"
	}
	for _, name := range []string{"SYNAPSE_TOKEN", "SYNAPSE_ADMIN_TOKEN"} {
		if v := strings.TrimSpace(s.getenv(name)); v != "" {
			return v, name
		}
	}
	path := filepath.Join(s.g.data, tokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	if v := strings.TrimSpace(string(b)); v != "" {
		return v, path
	}
	return "", ""
}

// client returns a client for the agent of the global flags.
func (s *session) client() *client.Client {
	tok, _ := s.token()
	return client.New(s.g.agent, tok, client.WithUserAgent("synapse-cli/"+Version))
}

// withTimeout bounds ctx by --timeout when it is set.
func (s *session) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.g.timeout > 0 {
		return context.WithTimeout(ctx, s.g.timeout)
	}
	return context.WithCancel(ctx)
}

// hint suggests a fix for common failures.
func (s *session) hint(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Status {
		case 401:
			if _, src := s.token(); src != "" {
				return "the agent refused the token from " + src
			}
			return "no token found: pass --token, set SYNAPSE_TOKEN, or point --data at the agent's data directory (it holds admin.token)"
		case 403:
			if apiErr.Code == "capability_lacking" {
				return "'synapse capabilities' lists the task types of the agent"
			}
			return "the token lacks the scope this needs (scopes: tasks:read, tasks:write, tier1:read, tier1:write, hil:l1..l3, admin)"
		}
		return ""
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "no agent answers at " + s.g.agent + ": start one with 'synapse serve' or set --agent"
	}
	if errors.Is(err, context.DeadlineExceeded) && s.g.timeout > 0 {
		return fmt.Sprintf("no answer within --timeout %s", s.g.timeout)
	}
	return ""
}
