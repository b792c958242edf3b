package tier1cmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
)

// exportStatus is an entry of GET /tier1/exports (package tier1/export's
// ExportStatus, the fields the table shows).
type exportStatus struct {
	Name          string   `json:"name"`
	Endpoint      string   `json:"endpoint"`
	State         string   `json:"state"`
	Priority      int      `json:"priority"`
	BacklogFrames uint64   `json:"backlog_frames"`
	BacklogBytes  uint64   `json:"backlog_bytes"`
	OldestUnsent  *string  `json:"oldest_unsent_ts"`
	LagSeconds    float64  `json:"lag_seconds"`
	SentFrames    uint64   `json:"sent_frames"`
	DroppedFrames uint64   `json:"dropped_frames"`
	Rate          float64  `json:"rate_bytes_per_s"`
	Cap           int64    `json:"bandwidth_bytes_per_s"`
	ETA           *float64 `json:"eta_seconds"`
}

func tier1ExportsVerb() *command.Verb {
	return &command.Verb{
		Name: "tier1 exports", Args: "[pause|resume NAME]", MaxArgs: 2,
		Summary: "the tier-1 exports: backlog, lag, rate and cap; pause or resume one",
		About: `Lists the agent's exports (GET /tier1/exports, scope tier1:read): state
(connected, backing_off, paused), priority, backlog in frames and bytes, lag
(how long the oldest batch waiting has waited), frames sent and dropped
(pruned before they were sent, or refused by the upstream), the rate on the
wire over the last 10 s against the cap, and the time the backlog needs at
that rate. --watch redraws the table every --interval until interrupted.
"pause NAME" and "resume NAME" (scope admin) stop and restart one export;
a pause holds across restarts.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse tier1 exports", "synapse tier1 exports --watch", "synapse tier1 exports pause cloud", "synapse tier1 exports --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			watch := fs.Bool("watch", false, "redraw the table until interrupted")
			every := fs.Duration("interval", 2*time.Second, "how often --watch redraws")
			return func(ctx context.Context, args []string) error {
				if len(args) > 0 {
					if len(args) != 2 || (args[0] != "pause" && args[0] != "resume") {
						return command.UsageErrorf("want pause NAME or resume NAME, got %q", args)
					}
					cctx, cancel := s.WithTimeout(ctx)
					defer cancel()
					var out struct {
						OK bool `json:"ok"`
					}
					if _, err := s.Post(cctx, "/tier1/exports/"+url.PathEscape(args[1])+"/"+args[0], nil, map[string]any{}, &out); err != nil {
						return err
					}
					fmt.Fprintf(s.IO.Out, "%s: %sd\n", args[1], args[0])
					return nil
				}
				if *every < 100*time.Millisecond {
					return command.UsageErrorf("--interval %s: at least 100ms", *every)
				}
				for {
					cctx, cancel := s.WithTimeout(ctx)
					var st struct {
						Exports []exportStatus `json:"exports"`
					}
					err := s.Get(cctx, "/tier1/exports", nil, &st)
					cancel()
					if err != nil {
						return err
					}
					if s.Flags.JSON && !*watch {
						return s.PrintJSON(st)
					}
					if *watch && s.Terminal(s.IO.Out) {
						fmt.Fprint(s.IO.Out, "\x1b[H\x1b[2J")
					}
					printExports(s.IO.Out, st.Exports)
					if !*watch {
						return nil
					}
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(*every):
					}
				}
			}
		},
	}
}

func printExports(w io.Writer, list []exportStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPRIO\tBACKLOG\tBYTES\tLAG\tSENT\tDROPPED\tRATE/S\tCAP/S\tETA\tENDPOINT")
	for _, e := range list {
		capS := "-"
		if e.Cap > 0 {
			capS = size(float64(e.Cap))
		}
		eta := "-"
		switch {
		case e.ETA != nil && *e.ETA == 0:
			eta = "0s"
		case e.ETA != nil:
			eta = (time.Duration(*e.ETA) * time.Second).Round(time.Second).String()
		case e.BacklogBytes > 0:
			eta = "stalled"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\n", e.Name, e.State, e.Priority, e.BacklogFrames,
			size(float64(e.BacklogBytes)), (time.Duration(e.LagSeconds * float64(time.Second))).Round(100*time.Millisecond),
			e.SentFrames, e.DroppedFrames, size(e.Rate), capS, eta, e.Endpoint)
	}
	_ = tw.Flush()
}

// size writes a byte count as B, kB, MB (powers of 1000).
func size(b float64) string {
	switch {
	case b >= 1e9:
		return strconv.FormatFloat(b/1e9, 'f', 1, 64) + "GB"
	case b >= 1e6:
		return strconv.FormatFloat(b/1e6, 'f', 1, 64) + "MB"
	case b >= 1e3:
		return strconv.FormatFloat(b/1e3, 'f', 1, 64) + "kB"
	}
	return strconv.FormatFloat(b, 'f', 0, 64) + "B"
}
