// Package tier1cmd holds the synapse tier1 command: the routines of an
// agent, a load test of its ingest (send) and the export of stored frames.
package tier1cmd

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/synapse-edge/synapse/cli/command"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/tier1export"
	"github.com/synapse-edge/synapse/internal/atomicfile"
)

// defaultRoutine is the built-in tier-1 routine.
const defaultRoutine = "synapse.telemetry"

// exportPageSize is the page size tier1 export asks for (the agent's most).
const exportPageSize = 10_000

// maxExportPages bounds the pages one export follows (10^10 frames).
const maxExportPages = 1_000_000

// Tier1Verbs returns the verbs of synapse tier1.
func Tier1Verbs() []*command.Verb {
	return []*command.Verb{tier1RoutinesVerb(), tier1SendVerb(), tier1ExportVerb(), tier1ExportsVerb()}
}

func tier1RoutinesVerb() *command.Verb {
	return &command.Verb{
		Name: "tier1 routines", MaxArgs: 0,
		Summary: "list the agent's tier-1 routines with their descriptor hashes",
		About: `Each routine is listed with its version, descriptor hash (two agents speak a
routine in tier 1 only when the hashes match) and its fields in wire order as
name:type, with the unit in brackets and a ? after optional fields. --json
prints the full descriptors.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{"synapse tier1 routines", "synapse tier1 routines --json"},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			return func(ctx context.Context, args []string) error {
				ctx, cancel := s.WithTimeout(ctx)
				defer cancel()
				routines, err := s.Client().Tier1Routines(ctx)
				if err != nil {
					return err
				}
				if routines == nil {
					routines = []client.Tier1Routine{}
				}
				if s.Flags.JSON {
					return s.PrintJSON(map[string]any{"routines": routines})
				}
				tw := tabwriter.NewWriter(s.IO.Out, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "CAPABILITY ID\tVERSION\tHASH\tFIELDS")
				for _, r := range routines {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.CapabilityID, r.Version, r.Hash, fieldList(r.Fields))
				}
				return tw.Flush()
			}
		},
	}
}

// fieldList renders fields as "name:type[unit]" words, optional ones
// with a trailing "?".
func fieldList(fields []client.Tier1Field) string {
	words := make([]string, len(fields))
	for i, f := range fields {
		w := f.Name + ":" + f.Type
		if f.Unit != "" {
			w += "[" + f.Unit + "]"
		}
		if f.Optional {
			w += "?"
		}
		words[i] = w
	}
	return strings.Join(words, " ")
}

func tier1ExportVerb() *command.Verb {
	return &command.Verb{
		Name: "tier1 export", MaxArgs: 0,
		Summary: "export stored tier-1 frames as JSON lines or CSV",
		About: `Pages through the frames of a routine in time order. --format jsonl writes
one JSON object per frame, as the agent returns it; --format csv writes a
header of the routine's field names in descriptor order and one row per
frame, with missing optional values empty. Output goes to standard output, or
with --out to FILE (written to a temporary file and renamed when complete).
The number of frames is printed on standard error.

--since and --until take an RFC 3339 time, unix nanoseconds, or a duration
meaning that long ago (1h, 30m). --timeout bounds each page request.`,
		Agent: true, Timeout: command.DefaultRequestTimeout,
		Examples: []string{
			"synapse tier1 export > frames.jsonl",
			"synapse tier1 export --format csv --since 1h --out last-hour.csv",
			"synapse tier1 export --device dev-0001 --since 2025-01-01T00:00:00Z --until 2025-01-02T00:00:00Z",
			"synapse tier1 export --routine acme.vibration --format csv",
		},
		Setup: func(fs *flag.FlagSet, s *command.Session) command.RunFunc {
			routine := fs.String("routine", defaultRoutine, "export the frames of this routine `ID`")
			since := fs.String("since", "", "only frames at or after `TIME`")
			until := fs.String("until", "", "only frames before `TIME`")
			device := fs.String("device", "", "only frames of this device `ID`")
			format := fs.String("format", "jsonl", "output `FORMAT`: jsonl or csv")
			out := fs.String("out", "", "write to `FILE` instead of standard output")
			return func(ctx context.Context, args []string) error {
				if *format != "jsonl" && *format != "csv" {
					return command.UsageErrorf("--format %q: want jsonl or csv", *format)
				}
				if *routine == "" {
					return command.UsageErrorf("--routine must not be empty")
				}
				now := time.Now()
				q := client.Tier1FrameQuery{DeviceID: *device, Limit: exportPageSize}
				var err error
				if q.Since, err = parseTimeFlag("since", *since, now); err != nil {
					return err
				}
				if q.Until, err = parseTimeFlag("until", *until, now); err != nil {
					return err
				}
				return exportFrames(ctx, s, *routine, q, *format, *out)
			}
		},
	}
}

// parseTimeFlag turns a --since or --until value into what the agent
// takes: RFC 3339 text and unix nanoseconds as they are, a duration as
// the unix nanoseconds of that long before now.
func parseTimeFlag(name, v string, now time.Time) (string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return "", nil
	}
	if _, err := strconv.ParseInt(v, 10, 64); err == nil {
		return v, nil
	}
	if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return v, nil
	}
	if d, err := time.ParseDuration(v); err == nil && d >= 0 {
		return strconv.FormatInt(now.Add(-d).UnixNano(), 10), nil
	}
	return "", command.UsageErrorf("--%s %q: want an RFC 3339 time, unix nanoseconds or a duration ago (e.g. 1h)", name, v)
}

// exportFrames pages through the frames and writes them to out (standard
// output when empty).
func exportFrames(ctx context.Context, s *command.Session, routine string, q client.Tier1FrameQuery, format, out string) error {
	c := s.Client()
	var header []string
	if format == "csv" {
		rctx, cancel := s.WithTimeout(ctx)
		routines, err := c.Tier1Routines(rctx)
		cancel()
		if err != nil {
			return err
		}
		for _, r := range routines {
			if r.CapabilityID == routine {
				for _, f := range r.Fields {
					header = append(header, f.Name)
				}
			}
		}
		if header == nil {
			return fmt.Errorf("export: the agent has no routine %q (see synapse tier1 routines)", routine)
		}
	}
	var w io.Writer = s.IO.Out
	var file *atomicfile.File
	if out != "" {
		var err error
		if file, err = atomicfile.Create(out, 0o600); err != nil {
			return err
		}
		defer file.Abort()
		w = file
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	fw := tier1export.NewWriter(bw, format, header)
	pl := s.StartProgress("tier1 export")
	n, err := fetchFrames(ctx, s, c, routine, q, fw.Write, func(n int) { pl.Set(groupDigits(int64(n)) + " frames") })
	pl.Stop()
	if err == nil {
		err = fw.Flush()
	}
	if err == nil {
		err = bw.Flush()
	}
	if err == nil && file != nil {
		err = file.Commit()
	}
	if err != nil {
		return err
	}
	dest := ""
	if out != "" {
		dest = " to " + out
	}
	fmt.Fprintf(s.IO.Err, "exported %s frames of %s%s\n", groupDigits(int64(n)), routine, dest)
	return nil
}

// fetchFrames calls fn with each frame of every page and returns their
// number.
func fetchFrames(ctx context.Context, s *command.Session, c *client.Client, routine string, q client.Tier1FrameQuery,
	fn func(json.RawMessage) error, pageDone func(n int)) (int, error) {
	n := 0
	seen := map[string]bool{}
	for page := 0; ; page++ {
		if page >= maxExportPages {
			return n, fmt.Errorf("export: stopped after %d pages", maxExportPages)
		}
		rctx, cancel := s.WithTimeout(ctx)
		p, err := c.Tier1Frames(rctx, routine, q)
		cancel()
		if err != nil {
			return n, err
		}
		for _, f := range p.Frames {
			if err := fn(f); err != nil {
				return n, err
			}
			n++
		}
		if pageDone != nil {
			pageDone(n)
		}
		if p.NextPageToken == "" {
			return n, nil
		}
		if seen[p.NextPageToken] {
			return n, fmt.Errorf("export: the agent repeated page token %q", p.NextPageToken)
		}
		seen[p.NextPageToken] = true
		q.PageToken = p.NextPageToken
	}
}

// groupDigits writes n with thousands separators: 1234567 → "1,234,567".
func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}
