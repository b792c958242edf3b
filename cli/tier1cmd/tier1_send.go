package tier1cmd

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/tier1load"
)

func tier1SendVerb() *command.Verb {
	return &command.Verb{
		Name: "tier1 send", MaxArgs: 0,
		Summary: "generate synapse.telemetry load and measure the acknowledged rate",
		About: `Sends synthetic synapse.telemetry frames over the tier-1 WebSocket (or with
--http as POSTed batches) and counts the agent's acknowledgements, each sent
only once its batch is durable. Batches are pipelined: up to --window (1024)
wait for their acknowledgement at a time, and the sender writes many of them
to the connection at once. A stream's rate is at most its window over the
time one group commit takes (about a millisecond with its fdatasync): a
window of 32 holds one-frame batches near 16k frames/s whatever the agent
does. The agent reads up to 4096 batches ahead within its in-flight budget
and stops reading beyond it; a larger window only adds latency. Devices are named dev-0001, dev-0002, ...;
each device's seq counts up from 1 and ts is the time of sending in unix
nanoseconds. Batch ids are HOSTNAME-PID-RUN-N, with RUN random per run (the
agent drops a batch whose id it has stored before).

It stops after --duration or --frames, whichever comes first (with --frames
alone there is no time limit), or on an interrupt, then waits up to --timeout
for the outstanding acknowledgements. On a terminal a live line shows the
rate on standard error; the summary (frames sent, acknowledged, refused with
the first error, duration, mean rate, acknowledgement latency p50/p99, bytes
per frame on the wire) goes to standard output. The exit code is 1 if any
batch was refused or the connection broke before every batch was
acknowledged.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse tier1 send",
			"synapse tier1 send --frames 1000000 --batch 500 --devices 100",
			"synapse tier1 send --batch 1 --window 4096 --duration 30s",
			"synapse tier1 send --rate 5000 --duration 1m --metric humidity --unit %",
			"synapse tier1 send --http --frames 10000 --json",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			var cfg tier1load.Config
			fs.IntVar(&cfg.Rate, "rate", 0, "send `N` frames per second (0: as fast as acknowledgements allow)")
			fs.IntVar(&cfg.Batch, "batch", 100, "`N` frames per batch")
			fs.IntVar(&cfg.Window, "window", tier1load.DefaultWindow, "up to `N` batches wait for their acknowledgement at once (WebSocket)")
			fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "stop after `DURATION` (0: no limit)")
			fs.Int64Var(&cfg.Frames, "frames", 0, "stop after `N` frames (0: no limit)")
			fs.IntVar(&cfg.Devices, "devices", 10, "spread the frames over `N` devices")
			fs.StringVar(&cfg.Metric, "metric", "temperature", "metric `NAME` of the frames")
			fs.StringVar(&cfg.Unit, "unit", "", "`UNIT` of the values (default: left out)")
			fs.BoolVar(&cfg.HTTP, "http", false, "POST each batch instead of using the WebSocket")
			return func(ctx context.Context, args []string) error {
				durationSet := false
				fs.Visit(func(f *flag.Flag) { durationSet = durationSet || f.Name == "duration" })
				if cfg.Frames > 0 && !durationSet {
					cfg.Duration = 0
				}
				if err := validateSend(&cfg); err != nil {
					return err
				}
				cfg.Drain = s.Flags.Timeout
				st, err := runSend(ctx, s, cfg)
				if st == nil {
					return err
				}
				sum := st.Summary(cfg)
				if perr := printSendSummary(s, cfg, sum); perr != nil && err == nil {
					err = perr
				}
				if err != nil {
					return err
				}
				if sum.Refused > 0 {
					return &command.ExitError{Code: command.ExitFailure, Msg: fmt.Sprintf("synapse tier1 send: %s frames refused; first error: %s",
						groupDigits(sum.Refused), sum.FirstError)}
				}
				return nil
			}
		},
	}
}

// validateSend checks the flags of tier1 send.
func validateSend(c *tier1load.Config) error {
	switch {
	case c.Rate < 0:
		return command.UsageErrorf("--rate %d: must not be negative", c.Rate)
	case c.Batch < 1 || c.Batch > tier1load.MaxBatch:
		return command.UsageErrorf("--batch %d: must be between 1 and %d", c.Batch, tier1load.MaxBatch)
	case c.Window < 1 || c.Window > tier1load.MaxWindow:
		return command.UsageErrorf("--window %d: must be between 1 and %d", c.Window, tier1load.MaxWindow)
	case c.Duration < 0:
		return command.UsageErrorf("--duration %s: must not be negative", c.Duration)
	case c.Frames < 0:
		return command.UsageErrorf("--frames %d: must not be negative", c.Frames)
	case c.Duration == 0 && c.Frames == 0:
		return command.UsageErrorf("give a limit: --duration or --frames")
	case c.Devices < 1 || c.Devices > tier1load.MaxDevices:
		return command.UsageErrorf("--devices %d: must be between 1 and %d", c.Devices, tier1load.MaxDevices)
	case c.Metric == "":
		return command.UsageErrorf("--metric must not be empty")
	}
	return nil
}

// runSend runs the load and returns its statistics; the error says why the
// run broke off. The statistics are nil when the run failed before any
// answer came, and worth printing otherwise.
func runSend(ctx context.Context, s *command.Session, cfg tier1load.Config) (*tier1load.Stats, error) {
	st := &tier1load.Stats{}
	t := tier1load.Target{Dial: func(ctx context.Context) (*client.Tier1Stream, error) {
		dctx, cancel := s.WithTimeout(ctx)
		defer cancel()
		return s.Client().DialTier1Stream(dctx)
	}}
	if cfg.HTTP {
		c, release := s.PooledClient(tier1load.HTTPSenders)
		defer release()
		t.Client = c
	}
	live := startLiveLine(s, st)
	err := tier1load.Run(ctx, cfg, t, st)
	live.stop()
	st.Finish()
	if err != nil && st.Unanswered() == st.FramesSent() {
		return nil, err // not one answer: the error says it all
	}
	return st, err
}
