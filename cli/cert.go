package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/internal/tlscert"
)

// certVerbs are the verbs of "synapse cert".
func certVerbs() []*command.Verb {
	return []*command.Verb{certInitVerb()}
}

func certInitVerb() *command.Verb {
	return &command.Verb{
		Name: "cert init", MaxArgs: 0,
		Summary: "write a key and a self-signed TLS certificate for the agent",
		About: "Writes DIR/agent.key (mode 0600, ECDSA P-256) and DIR/agent.crt, a certificate\n" +
			"valid five years for the host names and IP addresses given (default: this\n" +
			"host's name, localhost, 127.0.0.1 and the host of the listen address), and\n" +
			"prints its SHA-256 fingerprint, which the CLI pins with --fingerprint (or\n" +
			"trust the file with --cacert). Nothing is overwritten. DIR defaults to tls in\n" +
			"the data directory, whose own agent.key is the agent's identity key. Serve it\n" +
			"with the config \"tls\": {\"cert_file\": \"DIR/agent.crt\", \"key_file\": \"DIR/agent.key\"}.",
		Examples: []string{
			"synapse cert init",
			"synapse cert init --dir /var/lib/synapse/tls --host gw7.plant.example --host 10.0.4.7",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			dir := fs.String("dir", "", "`DIR` to write agent.key and agent.crt into (default: tls in the data directory, $SYNAPSE_DATA or ./data)")
			var hosts command.List
			fs.Var(&hosts, "host", "host `NAME_OR_IP` the certificate is for (repeatable)")
			listen := fs.String("listen", "", "the agent's listen `HOST:PORT`, whose host is certified too (default $SYNAPSE_LISTEN or 127.0.0.1:8080)")
			return func(ctx context.Context, _ []string) error {
				d := *dir
				if d == "" {
					// Not the data directory itself: its agent.key is the
					// agent's Ed25519 identity key.
					d = filepath.Join(firstSet(os.Getenv("SYNAPSE_DATA"), "./data"), "tls")
				}
				for _, f := range []string{"synapse.db", "admin.token"} {
					if _, err := os.Stat(filepath.Join(d, f)); err == nil {
						return command.UsageErrorf("%s is an agent's data directory, whose agent.key is the agent's identity key: write the certificate into %s (the default) or another directory", d, filepath.Join(d, "tls"))
					}
				}
				names := []string(hosts)
				if len(names) == 0 {
					names = defaultCertHosts(firstSet(*listen, os.Getenv("SYNAPSE_LISTEN"), "127.0.0.1:8080"))
				}
				cert, err := tlscert.Generate(d, names, time.Now())
				if errors.Is(err, tlscert.ErrExists) {
					return &command.ExitError{Code: command.ExitFailure, Msg: "synapse cert init: " + err.Error()}
				}
				if err != nil {
					return err
				}
				out := s.IO.Out
				fmt.Fprintf(out, "key:         %s\n", filepath.Join(d, tlscert.KeyName))
				fmt.Fprintf(out, "certificate: %s\n", filepath.Join(d, tlscert.CertName))
				fmt.Fprintf(out, "hosts:       %v\n", names)
				fmt.Fprintf(out, "not after:   %s\n", cert.NotAfter.UTC().Format(time.RFC3339))
				fmt.Fprintf(out, "sha256:      %s\n", tlscert.Fingerprint(cert))
				return nil
			}
		},
	}
}

// defaultCertHosts are this host's name, localhost, 127.0.0.1 and the host
// of listen (unless it is a wildcard address).
func defaultCertHosts(listen string) []string {
	var hosts []string
	add := func(h string) {
		if h != "" && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
	}
	add("localhost")
	add("127.0.0.1")
	if h, _, err := net.SplitHostPort(listen); err == nil {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			add(h)
		}
	}
	return hosts
}

func firstSet(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
