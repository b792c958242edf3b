// Package main (command tier1bench) measures tier-1 ingest side by side: the agent's
// durable WebSocket ingest, mosquitto at QoS 1, NATS JetStream with a file
// stream and async publish, and two physical limits run in process (the
// same frames written straight into bbolt in 1000-record transactions, and
// a bare fasthttp WebSocket server that stores nothing). Engines run
// interleaved, round by round, on the same machine; the table shows the
// median rate of each. run.sh starts the servers and calls it; see
// README.md.
//
// With -fleet (fleet.go) it compares instead the agent's paths through an
// MQTT broker with their HTTP counterparts, between agent processes and a
// mosquitto it starts itself: northbound tier-1 frames/s and P2P
// delegations/s.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// config is the command line.
type config struct {
	Frames  int           `json:"frames"`
	Batch   int           `json:"batch"`
	Single  int           `json:"single_frames"`
	Rounds  int           `json:"rounds"`
	Window  int           `json:"window"`
	Timeout time.Duration `json:"timeout_ns"`

	SynapseAddr string `json:"synapse_addr,omitempty"`
	SynapsePid  int    `json:"-"`
	Token       string `json:"-"`
	MQTTAddr    string `json:"mqtt_addr,omitempty"`
	MQTTPid     int    `json:"-"`
	NATSAddr    string `json:"nats_addr,omitempty"`
	NATSPid     int    `json:"-"`

	Dir      string `json:"-"`
	Out      string `json:"-"`
	Versions string `json:"versions,omitempty"`

	// Fleet mode (fleet.go): MQTT vs HTTP between agent processes.
	Fleet        bool          `json:"fleet,omitempty"`
	SynapseBin   string        `json:"-"`
	MosquittoBin string        `json:"-"`
	NBRunBatches int           `json:"nb_batches_per_run,omitempty"`
	NBBatches    []int         `json:"nb_batches,omitempty"`
	Delegations  int           `json:"delegations,omitempty"`
	RunTime      time.Duration `json:"run_time_ns,omitempty"`
	ClientCounts []int         `json:"clients,omitempty"`
	Only         string        `json:"only,omitempty"`
	AgentLog     string        `json:"agent_log_level,omitempty"`
}

// errUsage: bad flags (exit status 2).
var errUsage = errors.New("usage")

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "tier1bench:", err)
		os.Exit(1)
	}
}

func parseFlags(args []string, stderr io.Writer) (config, int, error) {
	var c config
	fs := flag.NewFlagSet("tier1bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.Frames, "frames", 200_000, "frames per run of the batched engines")
	fs.IntVar(&c.Batch, "batch", 1000, "frames per batch (WebSocket message, MQTT message, NATS message)")
	fs.IntVar(&c.Single, "single", 20_000, "frames per run of the one-frame-per-message rows (0: leave them out)")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds; each runs every engine once, in the same order")
	fs.IntVar(&c.Window, "window", 4096, "messages in flight, unacknowledged, for every client (MQTT, NATS PublishAsyncMaxPending, synapse WebSocket)")
	fs.DurationVar(&c.Timeout, "timeout", 2*time.Minute, "limit of one run")
	fs.StringVar(&c.SynapseAddr, "synapse", "", "agent HOST:PORT (empty: leave it out)")
	fs.IntVar(&c.SynapsePid, "synapse-pid", 0, "agent process id, for RSS and CPU")
	fs.StringVar(&c.MQTTAddr, "mqtt", "", "mosquitto HOST:PORT (empty: leave it out)")
	fs.IntVar(&c.MQTTPid, "mqtt-pid", 0, "mosquitto process id")
	fs.StringVar(&c.NATSAddr, "nats", "", "nats-server HOST:PORT (empty: leave it out)")
	fs.IntVar(&c.NATSPid, "nats-pid", 0, "nats-server process id")
	fs.StringVar(&c.Dir, "dir", "", "directory for the bbolt ceiling's file (default: a new temporary directory)")
	fs.StringVar(&c.Out, "out", "", "write the raw numbers as JSON to this file")
	fs.StringVar(&c.Versions, "versions", "", "engine versions, recorded in the JSON")
	freePortsN := fs.Int("free-ports", 0, "print N free TCP ports on 127.0.0.1 and exit")
	fs.BoolVar(&c.Fleet, "fleet", false, "fleet mode: MQTT vs HTTP between agent processes the harness starts (northbound tier-1, P2P delegations)")
	fs.StringVar(&c.SynapseBin, "synapse-bin", "", "fleet mode: the synapse binary")
	fs.StringVar(&c.MosquittoBin, "mosquitto-bin", "", "fleet mode: the mosquitto binary")
	fs.IntVar(&c.NBRunBatches, "nb-run", 300, "fleet mode: batches per northbound run")
	nbBatches := fs.String("nb-batch", "10,100,1000", "fleet mode: frames per northbound batch, one row pair each")
	fs.IntVar(&c.Delegations, "delegations", 2000, "fleet mode: most delegations per run")
	fs.DurationVar(&c.RunTime, "run-time", 4*time.Second, "fleet mode: a delegation run takes no new task after this")
	clients := fs.String("clients", "1,16", "fleet mode: concurrent delegation callers, one row pair each")
	fs.StringVar(&c.Only, "only", "", "fleet mode: only the northbound or only the p2p rows")
	fs.StringVar(&c.AgentLog, "agent-log-level", "warn", "fleet mode: the agents' --log-level (their logs are in -dir)")
	if err := fs.Parse(args); err != nil {
		return c, 0, errUsage
	}
	c.Token = os.Getenv("SYNAPSE_ADMIN_TOKEN")
	var ok1, ok2 bool
	c.ClientCounts, ok1 = intList(*clients, 256)
	c.NBBatches, ok2 = intList(*nbBatches, 100_000)
	if !ok1 || !ok2 {
		fmt.Fprintf(stderr, "tier1bench: -clients %q, -nb-batch %q: want positive numbers (at most 256 and 100000), comma-separated\n", *clients, *nbBatches)
		return c, 0, errUsage
	}
	switch {
	case c.Fleet && (c.SynapseBin == "" || c.MosquittoBin == ""):
		fmt.Fprintln(stderr, "tier1bench: -fleet needs -synapse-bin and -mosquitto-bin")
		return c, 0, errUsage
	case c.Only != "" && c.Only != "northbound" && c.Only != "p2p":
		fmt.Fprintf(stderr, "tier1bench: -only %q: want northbound or p2p\n", c.Only)
		return c, 0, errUsage
	case c.Fleet && (c.NBRunBatches < 1 || c.Delegations < 1 || c.RunTime <= 0):
		fmt.Fprintln(stderr, "tier1bench: -nb-run, -delegations and -run-time must be positive")
		return c, 0, errUsage
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "tier1bench: unexpected argument %q\n", fs.Arg(0))
		return c, 0, errUsage
	case c.Frames < 1 || c.Batch < 1 || c.Rounds < 1 || c.Window < 1 || c.Single < 0 || c.Timeout <= 0:
		fmt.Fprintln(stderr, "tier1bench: -frames, -batch, -rounds, -window and -timeout must be positive, -single not negative")
		return c, 0, errUsage
	case c.Batch > 100_000:
		fmt.Fprintln(stderr, "tier1bench: -batch is at most 100000 (the agent's frames-per-batch limit)")
		return c, 0, errUsage
	case c.SynapseAddr != "" && c.Token == "":
		fmt.Fprintln(stderr, "tier1bench: set SYNAPSE_ADMIN_TOKEN to the agent's admin token")
		return c, 0, errUsage
	}
	return c, *freePortsN, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, nPorts, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if nPorts > 0 {
		ports, err := freePorts(nPorts)
		if err != nil {
			return err
		}
		for _, p := range ports {
			fmt.Fprintln(stdout, p)
		}
		return nil
	}
	if c.Dir == "" {
		if c.Dir, err = os.MkdirTemp("", "tier1bench-"); err != nil {
			return fmt.Errorf("temp dir: %w", err)
		}
		defer os.RemoveAll(c.Dir)
	}
	if c.Fleet {
		return runFleet(ctx, c, stdout, stderr)
	}
	b, err := open(ctx, c)
	if err != nil {
		return err
	}
	defer b.close()

	res := &results{runInfo: newRunInfo(c)}
	if res.Wire, err = measureWireSizes(b.gen.baseTS, c.Batch); err != nil {
		return err
	}
	if c.SynapsePid > 0 {
		res.SynapseIdleRSS, _ = procRSS(c.SynapsePid)
	}
	es := b.engines()
	fmt.Fprintf(stderr, "tier1bench: %d engines × %d rounds; %d frames per batched run, %d per one-frame run; %d bytes/frame\n",
		len(es), c.Rounds, c.Frames, c.Single, res.Wire.Frame)
	if err := b.warmUp(ctx, es, stderr); err != nil {
		return err
	}
	res.Engines = make([]engineResult, len(es))
	for i, e := range es {
		res.Engines[i].engine = e
	}
	for round := 1; round <= c.Rounds; round++ {
		for i, e := range es {
			st, err := b.runOnce(ctx, e, round, e.Frames)
			if err != nil {
				return fmt.Errorf("round %d, %s (%s): %w", round, e.Name, e.Unit, err)
			}
			res.Engines[i].Runs = append(res.Engines[i].Runs, st)
			fmt.Fprintf(stderr, "  round %d  %-28s %-16s %12.0f frames/s\n", round, e.Name, e.Unit, st.FramesPerS)
		}
	}
	res.Finished = time.Now().UTC()
	res.summarize()
	res.writeTable(stdout)
	if c.Out != "" {
		if err := res.writeJSON(c.Out); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nraw numbers: %s\n", c.Out)
	}
	return nil
}

// open starts the in-process engines and connects to the servers.
func open(ctx context.Context, c config) (*bench, error) {
	b := &bench{cfg: c, gen: newGenerator(time.Now().UnixNano()), nonce: time.Now().Unix()}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var err error
	if c.SynapseAddr != "" {
		if err = waitHTTP(rctx, c.SynapseAddr, c.Token); err != nil {
			return nil, err
		}
	}
	if c.MQTTAddr != "" {
		if err = waitTCP(rctx, c.MQTTAddr); err != nil {
			return nil, fmt.Errorf("mosquitto: %w", err)
		}
	}
	if c.NATSAddr != "" {
		if err = waitTCP(rctx, c.NATSAddr); err != nil {
			return nil, fmt.Errorf("nats-server: %w", err)
		}
		if b.nats, err = dialNATS(c.NATSAddr, c.Window); err != nil {
			return nil, err
		}
	}
	if b.bolt, err = openBolt(c.Dir); err != nil {
		b.close()
		return nil, err
	}
	if b.sink, err = startSink(); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *bench) close() {
	if b.nats != nil {
		b.nats.close()
	}
	if b.bolt != nil {
		_ = b.bolt.close()
	}
	if b.sink != nil {
		_ = b.sink.close()
	}
}

// warmUp runs each engine once, untimed, on a few batches: connections,
// streams, files and buckets exist before round 1.
func (b *bench) warmUp(ctx context.Context, es []engine, stderr io.Writer) error {
	names := make([]string, 0, len(es))
	for _, e := range es {
		n := min(e.Frames, 5*e.Batch)
		if _, err := b.runOnce(ctx, e, 0, n); err != nil {
			return fmt.Errorf("warm-up, %s (%s): %w", e.Name, e.Unit, err)
		}
		names = append(names, e.Name+" ("+e.Unit+")")
	}
	fmt.Fprintf(stderr, "  warmed up: %s\n", strings.Join(names, "; "))
	return nil
}

// runOnce prepares and times one run of e, sampling its server process.
func (b *bench) runOnce(ctx context.Context, e engine, round, frames int) (runStats, error) {
	send, err := e.prepare(round, frames, e.Batch)
	if err != nil {
		return runStats{}, err
	}
	runtime.GC() // the previous run's garbage is not this run's cost
	rctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	s := sample(e.Pid)
	st, err := send(rctx)
	rss, cpu := s.stop()
	if err != nil {
		return runStats{}, err
	}
	st.MaxRSS, st.CPU, st.DiskBytes = rss, cpu.Seconds(), s.written()
	if st.Elapsed > 0 {
		st.FramesPerS = float64(st.Frames) / st.Elapsed.Seconds()
	}
	return st, nil
}

// intList parses "1,16": positive numbers up to most.
func intList(s string, most int) ([]int, bool) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > most {
			return nil, false
		}
		out = append(out, n)
	}
	return out, true
}
