package updatecmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/internal/selfupdate"
)

// UpdateVerb returns the update command.
func UpdateVerb(version string) *command.Verb {
	return &command.Verb{
		Name: "update", Summary: "install a signed release binary; the agent runs it on trial and rolls back if it is not healthy",
		About: `Verifies a release binary (--file, or --url: http or https, at most
update.max_bytes) with its minisign signature (--signature: a file or a URL;
by default BIN.minisig or URL.minisig) against the release keys of the
config (update.release_keys, update.release_keys_file), never a key that
came with the download. A binary that is changed, signed by another key,
not prehashed, larger than the cap, not runnable here or not synapse is
refused and nothing is changed. A good one replaces --binary (by default
this synapse), the previous one kept as BINARY.prev.

The agent runs the new binary at its next start, on trial: it must report
SERVING within update.health_timeout_seconds (30) or the previous binary is
put back and started. --pid sends the running agent SIGUSR2, which restarts
it into the new binary now (exec, or exit 75 for the service manager:
update.restart). --status prints the last update's state file.`,
		Examples: []string{
			"synapse update --config /etc/synapse/config.json --file synapse-v1.3.0-linux-arm64 --pid $(pidof synapse)",
			"synapse update --config /etc/synapse/config.json --url https://example.com/synapse-v1.3.0-linux-arm64",
			"systemctl restart synapse   # or: systemctl kill -s USR2 synapse",
			"synapse update --status",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			file := fs.String("file", "", "the new binary `BIN`")
			rawURL := fs.String("url", "", "download the new binary from `URL` (http or https)")
			sigArg := fs.String("signature", "", "its minisign signature: a `FILE` or URL (default BIN.minisig, URL.minisig)")
			sum := fs.String("sha256", "", "also require this SHA-256 (`HEX`) of the binary")
			configFile := fs.String("config", "", "the agent's config `FILE`, whose update section names the release keys")
			binary := fs.String("binary", "", "the binary to replace (default: this synapse)")
			pid := fs.Int("pid", 0, "send the agent `PID` SIGUSR2 once installed: it restarts into the new binary")
			status := fs.Bool("status", false, "print the last update's state and exit")
			fs.BoolVar(&s.Flags.JSON, "json", s.Flags.JSON, "print JSON instead of text")
			return func(ctx context.Context, _ []string) error {
				bin := *binary
				if bin == "" {
					var err error
					if bin, err = selfupdate.Executable(); err != nil {
						return err
					}
				}
				if *status {
					return printStatus(s, bin)
				}
				if (*file == "") == (*rawURL == "") {
					return command.UsageErrorf("give one of --file BIN and --url URL")
				}
				if *configFile == "" {
					return command.UsageErrorf("--config FILE is required: the release keys are the config's")
				}
				cf, err := config.Load(*configFile, os.Getenv)
				if err != nil {
					return err
				}
				keys, err := cf.Update.Keys()
				if err != nil {
					return err
				}
				src, sig := *file, *sigArg
				if src == "" {
					src = *rawURL
				}
				if sig == "" {
					sig = src + ".minisig"
				}
				sigBytes, err := readSignature(ctx, sig)
				if err != nil {
					return err
				}
				body, size, err := openBinary(ctx, *file, *rawURL, cf.Update.Max())
				if err != nil {
					return err
				}
				defer body.Close()
				p := s.StartProgress("update: " + src)
				st, err := selfupdate.Install(ctx, selfupdate.Request{
					Binary: bin, Body: body, Max: cf.Update.Max(), Signature: sigBytes, SHA256: *sum, Keys: keys,
					FromVersion: version, Source: sourceOf(*file, *rawURL), HealthTimeout: cf.Update.HealthTimeout(),
					Progress: func(n int64) { p.Set(sizeText(n, size)) },
				})
				p.Stop()
				if err != nil {
					return err
				}
				if s.Flags.JSON {
					if err := s.PrintJSON(st); err != nil {
						return err
					}
				} else {
					fmt.Fprintf(s.IO.Out, "installed synapse %s at %s (sha256 %s); the previous binary (%s) is %s\n",
						st.Version, st.Binary, st.SHA256, st.FromVersion, st.Previous)
				}
				if *pid > 0 {
					if err := syscall.Kill(*pid, syscall.SIGUSR2); err != nil {
						return fmt.Errorf("signal the agent %d: %w (restart it to run the new binary)", *pid, err)
					}
					if !s.Flags.JSON {
						fmt.Fprintf(s.IO.Out, "sent SIGUSR2 to %d: it restarts into %s, which has %ds to report SERVING\n", *pid, st.Version, st.HealthTimeoutSeconds)
					}
				} else if !s.Flags.JSON {
					fmt.Fprintf(s.IO.Out, "the agent runs it at its next start (systemctl restart synapse, or SIGUSR2), with %ds to report SERVING\n", st.HealthTimeoutSeconds)
				}
				return nil
			}
		},
	}
}

func sourceOf(file, rawURL string) string {
	if rawURL != "" {
		return "url " + rawURL
	}
	return "file"
}

func isURL(s string) bool {
	return strings.HasPrefix(s, "http://") || strings.HasPrefix(s, "https://")
}

func readSignature(ctx context.Context, sig string) ([]byte, error) {
	if isURL(sig) {
		return selfupdate.Fetch(ctx, sig, selfupdate.MaxSignatureBytes)
	}
	f, err := os.Open(sig)
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, selfupdate.MaxSignatureBytes+1))
	if err != nil {
		return nil, fmt.Errorf("signature: %w", err)
	}
	return b, nil
}

func openBinary(ctx context.Context, file, rawURL string, max int64) (io.ReadCloser, int64, error) {
	if rawURL != "" {
		return selfupdate.Open(ctx, rawURL, max)
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, 0, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s is not a regular file", file)
	}
	return f, info.Size(), nil
}

func sizeText(n, size int64) string {
	if size > 0 {
		return fmt.Sprintf("%.1f of %.1f MB (%d%%)", float64(n)/1e6, float64(size)/1e6, n*100/size)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}

func printStatus(s *command.Session, bin string) error {
	st, err := selfupdate.ReadState(bin)
	if err != nil {
		return err
	}
	if st == nil {
		if s.Flags.JSON {
			return s.PrintJSON(map[string]any{"binary": bin, "state": nil})
		}
		fmt.Fprintf(s.IO.Out, "%s: no update recorded\n", bin)
		return nil
	}
	if s.Flags.JSON {
		return s.PrintJSON(st)
	}
	fmt.Fprintf(s.IO.Out, "%s: %s: %s from %s (%s), installed %s\n", st.Binary, st.State, st.Version, st.FromVersion, st.Source,
		st.InstalledAt.Format("2006-01-02T15:04:05Z"))
	if st.Reason != "" {
		fmt.Fprintf(s.IO.Out, "  reason: %s\n", st.Reason)
	}
	if st.State == selfupdate.StateRolledBack {
		return &command.ExitError{Code: command.ExitFailure}
	}
	return nil
}
