package command

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
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
	// TokenFile is the admin token file in the data directory.
	TokenFile = "admin.token"
)

// IO is the standard streams a command reads and writes.
type IO struct {
	In       io.Reader
	Out, Err io.Writer
}

// Session is the state of one command line run.
type Session struct {
	IO *IO
	// Flags are the global flags, as given so far.
	Flags Globals
	// Version is the binary's version (in the User-Agent of requests).
	Version string
	getenv  func(string) string
	// IsTerm, when set (in tests), replaces the terminal check.
	IsTerm func(io.Writer) bool
}

// Globals are the flags shared by every command that talks to an agent.
type Globals struct {
	Agent   string // --agent, normalised by validate
	Token   string
	Data    string
	JSON    bool
	Timeout time.Duration
	// CACert and Fingerprint verify an https agent (tls.go).
	CACert      string
	Fingerprint string
}

// NewSession returns the session of a run with the streams sio, the
// environment getenv (SYNAPSE_AGENT, SYNAPSE_TOKEN, SYNAPSE_ADMIN_TOKEN)
// and the binary's version.
func NewSession(sio *IO, getenv func(string) string, version string) *Session {
	s := &Session{IO: sio, getenv: getenv, Version: version}
	s.Flags.Agent = defaultAgent
	if a := getenv("SYNAPSE_AGENT"); a != "" {
		s.Flags.Agent = a
	}
	s.Flags.Data = defaultData
	return s
}

// RegisterGlobals defines the global flags on fs with the current values
// as defaults, so that flags given before the command carry over;
// verbTimeout is the verb's own default for --timeout.
func (s *Session) RegisterGlobals(fs *flag.FlagSet, verbTimeout time.Duration) {
	s.registerGlobals(fs, verbTimeout, false)
}

// registerGlobals is RegisterGlobals; with peerPin the agent's
// fingerprint is --agent-fingerprint, for a verb whose --fingerprint
// pins a peer.
func (s *Session) registerGlobals(fs *flag.FlagSet, verbTimeout time.Duration, peerPin bool) {
	g := &s.Flags
	fpFlag := "fingerprint"
	if peerPin {
		fpFlag = "agent-fingerprint"
	}
	fs.StringVar(&g.Agent, "agent", g.Agent, "agent `URL` (env SYNAPSE_AGENT)")
	fs.StringVar(&g.Token, "token", g.Token,
		"bearer `TOKEN` (default: env SYNAPSE_TOKEN, else SYNAPSE_ADMIN_TOKEN, else DIR/admin.token)")
	fs.StringVar(&g.Data, "data", g.Data, "data `DIR` of the local agent (holds admin.token and synapse.db)")
	fs.BoolVar(&g.JSON, "json", g.JSON, "print JSON instead of text")
	fs.StringVar(&g.CACert, "cacert", g.CACert, "PEM `FILE` of the CA (or the self-signed agent.crt) an https agent's certificate is verified against")
	fs.StringVar(&g.Fingerprint, fpFlag, g.Fingerprint, "SHA-256 `HEX` of an https agent's certificate to accept instead (printed by synapse cert init)")
	def := g.Timeout
	if def == 0 {
		def = verbTimeout
	}
	fs.DurationVar(&g.Timeout, "timeout", def, "time limit for each request to the agent (0 means none)")
}

// validate checks the global flags and normalises --agent: an address
// without a scheme gets http://.
func (g *Globals) validate() error {
	a := strings.TrimSpace(g.Agent)
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	u, err := url.Parse(a)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("bad --agent %q: want http://HOST:PORT", g.Agent)
	}
	g.Agent = strings.TrimRight(u.String(), "/")
	if g.CACert != "" && g.Fingerprint != "" {
		return errors.New("--cacert and --fingerprint: give one (a CA to verify against, or the one certificate to accept)")
	}
	if g.Timeout < 0 {
		return fmt.Errorf("bad --timeout %s: must not be negative", g.Timeout)
	}
	return nil
}

// Token returns the bearer token to send and where it came from ("" when
// there is none): --token, SYNAPSE_TOKEN, SYNAPSE_ADMIN_TOKEN, then the
// admin.token file of the data directory.
func (s *Session) Token() (tok, source string) {
	if s.Flags.Token != "" {
		return s.Flags.Token, "--token"
	}
	for _, name := range []string{"SYNAPSE_TOKEN", "SYNAPSE_ADMIN_TOKEN"} {
		if v := strings.TrimSpace(s.getenv(name)); v != "" {
			return v, name
		}
	}
	path := filepath.Join(s.Flags.Data, TokenFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return "", ""
	}
	if v := strings.TrimSpace(string(b)); v != "" {
		return v, path
	}
	return "", ""
}

// UserAgent is the User-Agent of the command line's requests.
func (s *Session) UserAgent() string { return "synapse-cli/" + s.Version }

// Client returns a client for the agent of the global flags.
func (s *Session) Client() *client.Client {
	tok, _ := s.Token()
	return client.New(s.Flags.Agent, tok, client.WithUserAgent(s.UserAgent()),
		client.WithHTTPClient(&http.Client{Transport: s.transport()}))
}

// WithTimeout bounds ctx by --timeout when it is set.
func (s *Session) WithTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.Flags.Timeout > 0 {
		return context.WithTimeout(ctx, s.Flags.Timeout)
	}
	return context.WithCancel(ctx)
}

// hint suggests a fix for common failures.
func (s *Session) hint(err error) string {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.Status {
		case 401:
			if _, src := s.Token(); src != "" {
				return "the agent refused the token from " + src
			}
			return "no token found: pass --token, set SYNAPSE_TOKEN, or point --data at the agent's data directory (it holds admin.token)"
		case 403:
			if apiErr.Code == "capability_lacking" {
				return "'synapse capabilities' lists the task types of the agent"
			}
			return "the token lacks the scope this needs ('synapse token create --help' lists them)"
		}
		return ""
	}
	if h := tlsHint(err); h != "" {
		return h
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return "no agent answers at " + s.Flags.Agent + ": start one with 'synapse serve' or set --agent"
	}
	if errors.Is(err, context.DeadlineExceeded) && s.Flags.Timeout > 0 {
		return fmt.Sprintf("no answer within --timeout %s", s.Flags.Timeout)
	}
	return ""
}
