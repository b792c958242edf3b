package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// fleetResults is everything a fleet run measured; it is also the JSON
// file.
type fleetResults struct {
	runInfo
	Mosquitto string      `json:"mosquitto_conf"`
	Rows      []*fleetRow `json:"rows"`
}

// runFleet is fleet mode: start, warm up, run the rounds, report.
func runFleet(ctx context.Context, c config, stdout, stderr io.Writer) error {
	f, err := openFleet(ctx, c)
	if err != nil {
		return err
	}
	defer f.close()
	groups := f.fleetRows(c.NBRunBatches, c.Delegations)
	var rows []*fleetRow
	for _, g := range groups {
		rows = append(rows, g...)
	}
	res := &fleetResults{runInfo: newRunInfo(c), Mosquitto: mosquittoOptions(), Rows: rows}
	fmt.Fprintf(stderr, "tier1bench -fleet: mosquitto and %d agents up; %d rows × %d rounds\n", len(f.agents), len(rows), c.Rounds)

	// Warm-up, untimed: connections, sessions, contracts, buckets.
	for _, g := range f.fleetRows(min(c.NBRunBatches, 10), min(c.Delegations, 5)) {
		for _, r := range g {
			if _, err := f.runOnce(ctx, r, 0); err != nil {
				return fmt.Errorf("warm-up, %s over %s: %w", r.Path, r.Transport, err)
			}
		}
	}
	for round := 1; round <= c.Rounds; round++ {
		for _, g := range groups {
			// The order within the group rotates from round to round.
			turn := make([]*fleetRow, len(g))
			for i := range g {
				turn[i] = g[(i+round-1)%len(g)]
			}
			for _, r := range turn {
				run, err := f.runOnce(ctx, r, round)
				if err != nil {
					return fmt.Errorf("round %d, %s over %s: %w", round, r.Path, r.Transport, err)
				}
				r.Runs = append(r.Runs, run)
				fmt.Fprintf(stderr, "  round %d  %-40s %-5s %10.0f %s\n", round, r.Path, r.Transport, run.Rate, r.Unit)
			}
		}
	}
	res.Finished = time.Now().UTC()
	res.summarize()
	res.writeTable(stdout)
	if c.Out != "" {
		if err := writeJSONFile(c.Out, res); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nraw numbers: %s\n", c.Out)
	}
	return nil
}

func (f *fleet) runOnce(ctx context.Context, r *fleetRow, round int) (fleetRun, error) {
	rctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	run, err := r.run(rctx, round)
	if err != nil {
		if perr := f.alive(); perr != nil {
			return run, fmt.Errorf("%w\n%v", err, perr)
		}
	}
	return run, err
}

// summarize fills the medians and the CPU per unit.
func (r *fleetResults) summarize() {
	for _, row := range r.Rows {
		rates := make([]float64, len(row.Runs))
		perUnit := map[string][]float64{}
		for i, run := range row.Runs {
			rates[i] = run.Rate
			for role, s := range run.CPU {
				perUnit[role] = append(perUnit[role], s/float64(max(run.Units, 1)))
			}
		}
		row.Median = median(rates)
		row.CPUPerUnit = map[string]time.Duration{}
		for role, xs := range perUnit {
			row.CPUPerUnit[role] = time.Duration(median(xs) * 1e9)
		}
	}
}

// writeTable prints the markdown table and what it compares.
func (r *fleetResults) writeTable(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\n## Fleet paths: MQTT (mosquitto), WebSocket, HTTP between agents, %d rounds interleaved (%s/%s, %d CPUs, %s)\n\n",
		c.Rounds, r.GOOS, r.GOARCH, r.CPUs, r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintln(w, "| path | over | median | ÷ HTTP (median of the rounds' ratios) | runs | CPU per frame or task (median) |")
	fmt.Fprintln(w, "|---|---|--:|--:|---|---|")
	for _, row := range r.Rows {
		runs := make([]string, len(row.Runs))
		for j, run := range row.Runs {
			runs[j] = human(run.Rate)
		}
		ratio := "—"
		if http := r.httpRow(row.Path); http != nil && http != row {
			if x := roundRatio(row, http); x > 0 {
				ratio = fmt.Sprintf("%.2f×", x)
			}
		}
		roles := make([]string, 0, len(row.CPUPerUnit))
		for role := range row.CPUPerUnit {
			roles = append(roles, role)
		}
		slices.Sort(roles)
		cpu := make([]string, len(roles))
		for j, role := range roles {
			cpu[j] = fmt.Sprintf("%s (%s) %s", role, row.Roles[role], micros(row.CPUPerUnit[role]))
		}
		fmt.Fprintf(w, "| %s | %s | %s %s | %s | %s | %s |\n", row.Path, row.Transport, human(row.Median), row.Unit, ratio,
			strings.Join(runs, ", "), strings.Join(cpu, "; "))
	}
	fmt.Fprintf(w, "\nNorthbound: %d batches per run (of the row's size), sent to the sending agent's WebSocket "+
		"/tier1/stream (each batch acknowledged after its fsync there); the rate counts from the first send until the "+
		"consumer has every frame: for MQTT a plain subscriber (QoS 1) in the harness, deduplicating on batch_id; "+
		"for WebSocket and HTTP a second agent that stores them (its /metrics polled every 10 ms). The uplink removes "+
		"batches from its queue (an fsync) once acknowledged: at the broker's PUBACK for MQTT, at the upstream's answer "+
		"after its own fsync for WebSocket and HTTP. HTTP is one POST per batch, one at a time; MQTT and WebSocket keep "+
		"a window of up to 32 batches in flight and remove the acknowledged ones in one transaction.\n", c.NBRunBatches)
	for _, row := range r.Rows {
		var ingest []float64
		for _, run := range row.Runs {
			if run.IngestRate > 0 {
				ingest = append(ingest, run.IngestRate)
			}
		}
		if len(ingest) > 0 {
			fmt.Fprintf(w, "- %s, %s: the sending agent took the frames at %s frames/s (median), the consumer had them all at %s frames/s\n",
				row.Path, row.Transport, human(median(ingest)), human(row.Median))
		}
	}
	fmt.Fprintf(w, "\nDelegations: an echo task with a target, POST /task?wait=30 on the requester, answered when the "+
		"executor's result is back (every state durable on both sides); each run stops after %d tasks or %s. "+
		"MQTT: both agents' endpoints are mqtt:///ID (they share only the broker); HTTP: plain http:// endpoints.\n",
		c.Delegations, c.RunTime)
	fmt.Fprintf(w, "\nmosquitto (started by the harness on a 127.0.0.1 port): %s\n", strings.ReplaceAll(strings.TrimSpace(r.Mosquitto), "\n", "; "))
	fmt.Fprintln(w, "CPU is user+system time from /proc in 10 ms ticks, per frame or task, of each process: "+
		"the harness's own clients and the MQTT consumer are not counted.")
}

// httpRow is the HTTP row of path.
func (r *fleetResults) httpRow(path string) *fleetRow {
	for _, row := range r.Rows {
		if row.Path == path && row.Transport == "HTTP" {
			return row
		}
	}
	return nil
}

// roundRatio is the median over the rounds of a's rate over b's in the
// same round (0 without runs).
func roundRatio(a, b *fleetRow) float64 {
	var xs []float64
	for i := range min(len(a.Runs), len(b.Runs)) {
		if b.Runs[i].Rate > 0 {
			xs = append(xs, a.Runs[i].Rate/b.Runs[i].Rate)
		}
	}
	return median(xs)
}

// micros writes d in µs or ms (0: less than one 10 ms tick over the run).
func micros(d time.Duration) string {
	switch {
	case d == 0:
		return "0 (under a tick)"
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.1f µs", float64(d)/1e3)
}

// writeJSONFile writes v as indented JSON to path, creating its directory.
func writeJSONFile(path string, v any) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
