package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// runInfo is what every results file starts with: the harness's
// configuration, when it ran and on what.
type runInfo struct {
	Config    config    `json:"config"`
	Started   time.Time `json:"started"`
	Finished  time.Time `json:"finished"`
	GoVersion string    `json:"go_version"`
	GOOS      string    `json:"goos"`
	GOARCH    string    `json:"goarch"`
	CPUs      int       `json:"cpus"`
}

// newRunInfo is the runInfo of a run of c starting now.
func newRunInfo(c config) runInfo {
	return runInfo{Config: c, Started: time.Now().UTC(), GoVersion: runtime.Version(),
		GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, CPUs: runtime.NumCPU()}
}

// results is everything one harness run measured; it is also the JSON file.
type results struct {
	runInfo
	Wire           wireSizes      `json:"bytes_per_frame"`
	SynapseIdleRSS int64          `json:"synapse_idle_rss_bytes,omitempty"`
	Engines        []engineResult `json:"engines"`
	Targets        []target       `json:"targets"`
}

// engineResult is one row: its runs and what they sum up to.
type engineResult struct {
	engine
	Runs   []runStats `json:"runs"`
	Median float64    `json:"median_frames_per_second"`
	// Ratio is the synapse row of the same group's median over this one's.
	Ratio  float64 `json:"synapse_ratio,omitempty"`
	MaxRSS int64   `json:"max_rss_bytes,omitempty"`
	// CPUPerFrame is the server process's CPU time per frame, median run.
	CPUPerFrame time.Duration `json:"cpu_per_frame_ns,omitempty"`
	// DiskPerFrame is what the server process wrote to storage per
	// frame (write_bytes), median run.
	DiskPerFrame float64 `json:"disk_bytes_per_frame,omitempty"`
}

// target is one of the goals the issue sets, checked against the medians.
type target struct {
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	Goal  float64 `json:"goal"`
	Met   bool    `json:"met"`
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

// summarize fills the medians, ratios and targets.
func (r *results) summarize() {
	ref := map[string]float64{} // group → synapse median
	for i := range r.Engines {
		e := &r.Engines[i]
		rates, cpus, disk := make([]float64, len(e.Runs)), make([]float64, len(e.Runs)), make([]float64, len(e.Runs))
		for j, st := range e.Runs {
			rates[j] = st.FramesPerS
			cpus[j] = st.CPU / float64(max(st.Frames, 1))
			disk[j] = float64(st.DiskBytes) / float64(max(st.Frames, 1))
			e.MaxRSS = max(e.MaxRSS, st.MaxRSS)
		}
		e.Median = median(rates)
		if e.Pid > 0 {
			e.CPUPerFrame = time.Duration(median(cpus) * 1e9)
			e.DiskPerFrame = median(disk)
		}
		if e.Synapse {
			ref[e.Group] = e.Median
		}
	}
	for i := range r.Engines {
		e := &r.Engines[i]
		if s, ok := ref[e.Group]; ok && e.Median > 0 {
			e.Ratio = s / e.Median
		}
	}
	r.Targets = nil
	find := func(prefix, group string) *engineResult {
		for i := range r.Engines {
			if strings.HasPrefix(r.Engines[i].Name, prefix) && r.Engines[i].Group == group {
				return &r.Engines[i]
			}
		}
		return nil
	}
	syn := find("synapse", "batch")
	if syn == nil || syn.Median == 0 {
		return
	}
	check := func(name string, other *engineResult, goal float64) {
		if other == nil || other.Median == 0 {
			return
		}
		ratio := syn.Median / other.Median
		r.Targets = append(r.Targets, target{Name: name, Ratio: ratio, Goal: goal, Met: ratio >= goal})
	}
	b := fmt.Sprintf("%d frames/msg", r.Config.Batch)
	check("synapse ÷ mosquitto QoS1 ("+b+" both)", find("mosquitto", "batch"), 10)
	check("synapse ("+b+") ÷ mosquitto QoS1 (1 frame/msg)", find("mosquitto", "single"), 10)
	check("synapse ÷ JetStream async ("+b+" both)", find("NATS", "batch"), 1.5)
	check("synapse ("+b+") ÷ JetStream async (1 frame/msg)", find("NATS", "single"), 1.5)
	check("synapse ÷ bbolt 1000-record-transaction ceiling", find("bbolt", "batch"), 0.5)
}

// writeTable prints the markdown table and the lines under it.
func (r *results) writeTable(w io.Writer) {
	c := r.Config
	fmt.Fprintf(w, "\n## Tier-1 ingest, one connection, %d rounds interleaved (%s/%s, %d CPUs, %s)\n\n",
		c.Rounds, r.GOOS, r.GOARCH, r.CPUs, r.Started.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintln(w, "| engine | message | acked on | median frames/s | synapse ÷ engine | runs (frames/s) | server CPU/frame | server bytes written/frame | server max RSS |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|---|--:|--:|--:|")
	for _, e := range r.Engines {
		runs := make([]string, len(e.Runs))
		for i, st := range e.Runs {
			runs[i] = human(st.FramesPerS)
		}
		ratio := "—"
		if e.Ratio > 0 {
			ratio = fmt.Sprintf("%.2f×", e.Ratio)
		}
		cpu, rss, disk := "—", "—", "—"
		if e.Pid > 0 {
			disk = fmt.Sprintf("%.0f B", e.DiskPerFrame)
			cpu = fmt.Sprintf("%.2f µs", float64(e.CPUPerFrame)/1e3)
			if e.CPUPerFrame == 0 { // under one clock tick for the run
				cpu = fmt.Sprintf("< %.2f µs", 1e6/userHZ/float64(max(e.Frames, 1)))
			}
			rss = fmt.Sprintf("%.0f MiB", float64(e.MaxRSS)/(1<<20))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", e.Name, e.Unit, e.Ack, human(e.Median), ratio,
			strings.Join(runs, ", "), cpu, disk, rss)
	}
	fmt.Fprintln(w, "\nServer bytes written/frame: the server process's write_bytes (/proc/PID/io: whole pages, as the page cache dirties them) "+
		"over the run, per frame, median run; what it writes after the run (the agent's next checkpoint, within a second) is not in it.")
	fmt.Fprintf(w, "\nFrames per run: %d in messages of %d frames (the MQTT and NATS payload is the same encoded tier-1 batch), "+
		"%d in one-frame messages (MQTT/NATS payload: one encoded frame; synapse: a one-frame batch). "+
		"Ratios compare with the synapse row of the same message size; bbolt compares with the batched synapse row. "+
		"Every client keeps up to %d messages unacknowledged: paho (QoS 1), nats.go's PublishAsync (PublishAsyncMaxPending) "+
		"and the harness's WebSocket client (pre-encoded batches, buffered writes, acks read on their own goroutine); "+
		"the agent reads up to 4096 batches ahead (16 MiB in flight at most).\n",
		c.Frames, c.Batch, c.Single, c.Window)

	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\nTargets (medians):")
		for _, t := range r.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "NOT met"
			}
			fmt.Fprintf(w, "- %s = %.2f× (goal ≥ %g×): %s\n", t.Name, t.Ratio, t.Goal, verdict)
		}
	}

	ws := r.Wire
	fmt.Fprintf(w, "\nBytes per frame (message payload, no transport framing):\n")
	fmt.Fprintf(w, "- tier-1 msgpack frame: %d B; in a %d-frame batch with batch_id: %.1f B/frame; one-frame batch: %d B\n",
		ws.Frame, ws.BatchFrames, ws.Tier1Batch, ws.Tier1Single)
	fmt.Fprintf(w, "- JSON object with named fields: %d B (%.2f× the tier-1 frame)\n", ws.JSONFrame, float64(ws.JSONFrame)/float64(ws.Frame))
	fmt.Fprintf(w, "- signed JSON envelope per frame: %d B (%.2f× the batched tier-1 frame); the same envelope in msgpack: %d B\n",
		ws.EnvelopeJSON, float64(ws.EnvelopeJSON)/ws.Tier1Batch, ws.EnvelopeMsgpack)
	fmt.Fprintf(w, "- signed JSON envelope of %d frame objects: %.1f B/frame (%.2f× the batched tier-1 frame)\n",
		ws.BatchFrames, ws.EnvelopeBatch, ws.EnvelopeBatch/ws.Tier1Batch)

	for _, e := range r.Engines {
		if !e.Synapse || len(e.Runs) == 0 {
			continue
		}
		var commits, writes, secs, elapsed float64
		for _, st := range e.Runs {
			commits += st.Commits
			writes += st.Writes
			secs += st.CommitSecs
			elapsed += st.Elapsed.Seconds()
		}
		frames := float64(e.Frames * len(e.Runs))
		fmt.Fprintf(w, "\nsynapse (%s): max RSS %.0f MiB during ingest (idle before: %.0f MiB); %.2f µs CPU per frame; "+
			"%.0f commits, %.0f frames and %.1f store writes per fsync'd commit (a write holds the batches a stream read during the previous commit), commits busy %.0f%% of the wall time",
			e.Unit, float64(e.MaxRSS)/(1<<20), float64(r.SynapseIdleRSS)/(1<<20), float64(e.CPUPerFrame)/1e3,
			commits, frames/max(commits, 1), writes/max(commits, 1), 100*secs/max(elapsed, 1e-9))
		fmt.Fprintln(w)
	}
}

// human writes a rate with a k or M suffix.
func human(x float64) string {
	switch {
	case x >= 10e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e6:
		return fmt.Sprintf("%.2fM", x/1e6)
	case x >= 10e3:
		return fmt.Sprintf("%.0fk", x/1e3)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}

// writeJSON writes r to path, creating its directory.
func (r *results) writeJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("results dir: %w", err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}
