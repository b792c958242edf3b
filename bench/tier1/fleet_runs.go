package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/synapse-edge/synapse/wire"
)

// nbConsumer is the cloud side of the MQTT northbound rows: a plain MQTT
// subscriber that counts the frames of each batch it has not seen yet
// (batches are at least once; batch_id deduplicates).
type nbConsumer struct {
	c mqtt.Client

	mu      sync.Mutex
	seen    map[string]bool
	frames  int
	copies  int
	bad     int
	target  int
	reached chan struct{}
}

func startConsumer(ctx context.Context, addr, topic string) (*nbConsumer, error) {
	nc := &nbConsumer{seen: map[string]bool{}}
	opts := mqtt.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(fmt.Sprintf("bench-consumer-%d", time.Now().UnixNano())).
		SetCleanSession(true).SetAutoReconnect(false).SetConnectTimeout(10 * time.Second)
	nc.c = mqtt.NewClient(opts)
	if err := waitToken(ctx, nc.c.Connect()); err != nil {
		return nil, fmt.Errorf("consumer: connect: %w", err)
	}
	if err := waitToken(ctx, nc.c.Subscribe(topic, 1, nc.handle)); err != nil {
		nc.c.Disconnect(100)
		return nil, fmt.Errorf("consumer: subscribe %s: %w", topic, err)
	}
	return nc, nil
}

func (nc *nbConsumer) handle(_ mqtt.Client, m mqtt.Message) {
	id, n, err := batchIDAndCount(m.Payload())
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.copies++
	switch {
	case err != nil:
		nc.bad++
	case !nc.seen[id]:
		nc.seen[id] = true
		nc.frames += n
	}
	if nc.reached != nil && nc.frames >= nc.target {
		close(nc.reached)
		nc.reached = nil
	}
}

// expect returns a channel closed once n more distinct frames arrived.
func (nc *nbConsumer) expect(n int) <-chan struct{} {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	nc.target, nc.reached = nc.frames+n, make(chan struct{})
	return nc.reached
}

func (nc *nbConsumer) counts() (frames, copies, bad int) {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	return nc.frames, nc.copies, nc.bad
}

func (nc *nbConsumer) close() { nc.c.Disconnect(100) }

// batchIDAndCount reads a batch [capability_id, version, [frame, ...],
// batch_id]: its id and its number of frames.
func batchIDAndCount(b []byte) (string, int, error) {
	r := wire.NewMsgpackReader(b, wire.DefaultMsgpackLimits)
	if n, err := r.ReadArrayHeader(); err != nil || n != 4 {
		return "", 0, errNotBatch
	}
	for range 2 {
		if _, err := r.ReadString(); err != nil {
			return "", 0, err
		}
	}
	n, err := r.ReadArrayHeader()
	if err != nil {
		return "", 0, err
	}
	for range n {
		if err := r.Skip(); err != nil {
			return "", 0, err
		}
	}
	id, err := r.ReadString()
	return id, n, err
}

// fleetRun is what one run of a fleet row measured.
type fleetRun struct {
	Elapsed time.Duration `json:"elapsed_ns"`
	Units   int           `json:"units"`
	Rate    float64       `json:"per_second"`
	// IngestRate (northbound): frames/s into the sending agent alone,
	// acknowledged after its fsync.
	IngestRate float64 `json:"ingest_per_second,omitempty"`
	// Copies (MQTT northbound): messages the consumer got, duplicates
	// included.
	Copies int `json:"copies,omitempty"`
	// CPU is each process's user+system CPU time over the run, by role.
	CPU map[string]float64 `json:"cpu_seconds"`
}

// fleetRow is one line of the table: a path over one transport.
type fleetRow struct {
	Path      string     `json:"path"`
	Transport string     `json:"transport"`
	Unit      string     `json:"unit"`
	Runs      []fleetRun `json:"runs"`
	Median    float64    `json:"median_per_second"`
	// CPUPerUnit is each role's median CPU time per frame or delegation.
	CPUPerUnit map[string]time.Duration `json:"cpu_per_unit_ns"`
	// Roles names the process of each role, for the table.
	Roles map[string]string `json:"roles"`

	run func(ctx context.Context, round int) (fleetRun, error)
}

// samplers samples several processes by role.
type samplers map[string]*sampler

func sampleAll(pids map[string]int) samplers {
	s := samplers{}
	for role, pid := range pids {
		s[role] = sample(pid)
	}
	return s
}

func (s samplers) stop() map[string]float64 {
	out := map[string]float64{}
	for role, x := range s {
		_, cpu := x.stop()
		out[role] = cpu.Seconds()
	}
	return out
}

// northbound ingests frames into the sending agent and waits until the
// consumer has every one.
func (f *fleet) northbound(ctx context.Context, over string, round, frames, batch int) (fleetRun, error) {
	viaMQTT := over == "MQTT"
	sender, sink := f.agents[nbHTTP], f.agents[nbSink]
	if over == "WebSocket" {
		sender = f.agents[nbWS]
	}
	pids := map[string]int{"sender": sender.p.pid(), "receiver": sink.p.pid()}
	tag := strings.ToLower(over)
	if viaMQTT {
		sender = f.agents[nbMQTT]
		pids = map[string]int{"sender": sender.p.pid(), "broker": f.broker.pid()}
	}
	msgs := f.gen.batches(f.gen.take(frames), frames, batch, fmt.Sprintf("%x-%s-r%d-b%d", f.nonce, tag, round, batch))
	var arrived <-chan struct{}
	var before float64
	if viaMQTT {
		arrived = f.consumer.expect(frames)
	} else {
		m, err := scrapeMetrics(ctx, sink.addr, sink.token)
		if err != nil {
			return fleetRun{}, err
		}
		before = m[metricFrames]
	}
	_, copies0, _ := f.consumer.counts()
	runtime.GC()
	s := sampleAll(pids)
	start := time.Now()
	ingest, acked, err := wsIngest(ctx, "ws://"+sender.addr+wire.APIPrefix+"/tier1/stream", sender.token, msgs, f.cfg.Window)
	if err == nil && acked != frames {
		err = fmt.Errorf("the sender acknowledged %d of %d frames", acked, frames)
	}
	if err == nil {
		if viaMQTT {
			select {
			case <-arrived:
			case <-ctx.Done():
				got, _, bad := f.consumer.counts()
				err = fmt.Errorf("the MQTT consumer has %d frames (%d undecodable messages): %w", got, bad, ctx.Err())
			}
		} else {
			err = waitMetric(ctx, sink, metricFrames, before+float64(frames), 10*time.Millisecond)
		}
	}
	elapsed := time.Since(start)
	cpu := s.stop()
	if err != nil {
		return fleetRun{}, fmt.Errorf("northbound %s: %w", tag, err)
	}
	// Untimed: the sender's queue is empty before the next run.
	if err := waitMetricBelow(ctx, sender, "synapse_tier1_uplink_pending_batches", 1); err != nil {
		return fleetRun{}, err
	}
	run := fleetRun{Elapsed: elapsed, Units: frames, Rate: float64(frames) / elapsed.Seconds(),
		IngestRate: float64(frames) / ingest.Seconds(), CPU: cpu}
	if viaMQTT {
		_, copies, bad := f.consumer.counts()
		if bad > 0 {
			return fleetRun{}, fmt.Errorf("northbound mqtt: %d undecodable messages", bad)
		}
		run.Copies = copies - copies0
	} else {
		m, err := scrapeMetrics(ctx, sink.addr, sink.token)
		if err != nil {
			return fleetRun{}, err
		}
		if got := m[metricFrames] - before; got != float64(frames) {
			return fleetRun{}, fmt.Errorf("northbound http: the receiving agent stored %.0f frames, want %d", got, frames)
		}
	}
	return run, nil
}

// waitMetric polls an agent's unlabelled metric until it reaches want.
func waitMetric(ctx context.Context, a *fleetAgent, name string, want float64, every time.Duration) error {
	for {
		m, err := scrapeMetrics(ctx, a.addr, a.token)
		if err == nil && m[name] >= want {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s is %v, want %v: %w", a.id, name, m[name], want, ctx.Err())
		case <-time.After(every):
		}
	}
}

// waitMetricBelow polls an agent's metric until it is below limit.
func waitMetricBelow(ctx context.Context, a *fleetAgent, name string, limit float64) error {
	for {
		m, err := scrapeMetrics(ctx, a.addr, a.token)
		if err == nil && m[name] < limit {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %s is %v, want below %v: %w", a.id, name, m[name], limit, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// delegations runs echo tasks from A with B as target, by clients
// concurrent callers, until limit were submitted or -run-time passed;
// every one must come back completed.
func (f *fleet) delegations(ctx context.Context, viaMQTT bool, clients, limit int) (fleetRun, error) {
	a, b := f.agents[dhA], f.agents[dhB]
	pids := map[string]int{"requester": a.p.pid(), "executor": b.p.pid()}
	if viaMQTT {
		a, b = f.agents[dmA], f.agents[dmB]
		pids = map[string]int{"requester": a.p.pid(), "executor": b.p.pid(), "broker": f.broker.pid()}
	}
	body := []byte(`{"task_type":"echo","payload":{"n":1},"target":"` + b.id + `"}`)
	var next, done atomic.Int64
	var errMu sync.Mutex
	var errs []error
	runtime.GC()
	s := sampleAll(pids)
	start := time.Now()
	stopAt := start.Add(f.cfg.RunTime)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(limit) && time.Now().Before(stopAt) && ctx.Err() == nil {
				if err := f.delegateOne(ctx, a, body); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := s.stop()
	if err := errors.Join(errs...); err != nil {
		return fleetRun{}, err
	}
	n := int(done.Load())
	return fleetRun{Elapsed: elapsed, Units: n, Rate: float64(n) / elapsed.Seconds(), CPU: cpu}, nil
}

// delegateOne submits one delegated echo and checks that it completed.
func (f *fleet) delegateOne(ctx context.Context, a *fleetAgent, body []byte) error {
	st, b, err := a.call(ctx, f.hc, http.MethodPost, wire.APIPrefix+"/task?wait=30", body)
	if err != nil {
		return fmt.Errorf("delegate: %w", err)
	}
	var v struct {
		Status string `json:"status"`
	}
	if st != http.StatusOK || json.Unmarshal(b, &v) != nil || v.Status != "completed" {
		err := fmt.Errorf("delegate: HTTP %d %.300s, want 200 and completed", st, b)
		var t struct {
			TaskID string `json:"task_id"`
		}
		if json.Unmarshal(b, &t) == nil && t.TaskID != "" {
			// What the task went through, for the report.
			if st, b, gerr := a.call(ctx, f.hc, http.MethodGet, wire.APIPrefix+"/task/"+t.TaskID, nil); gerr == nil {
				err = fmt.Errorf("%w; GET /task/%s: HTTP %d %.2000s", err, t.TaskID, st, b)
			}
		}
		return err
	}
	return nil
}

// fleetRows lists the rows in groups (a path over MQTT, [WebSocket,] and
// HTTP); each round runs every group, its order rotating from round to
// round. Each northbound run sends batches batches, each delegation run
// at most tasks tasks.
func (f *fleet) fleetRows(batches, tasks int) [][]*fleetRow {
	var groups [][]*fleetRow
	nbBatches, clients := f.cfg.NBBatches, f.cfg.ClientCounts
	switch f.cfg.Only {
	case "northbound":
		clients = nil
	case "p2p":
		nbBatches = nil
	}
	for _, batch := range nbBatches {
		nb := func(over string) func(context.Context, int) (fleetRun, error) {
			return func(ctx context.Context, round int) (fleetRun, error) {
				return f.northbound(ctx, over, round, batches*batch, batch)
			}
		}
		p := fmt.Sprintf("northbound tier-1, %d-frame batches", batch)
		groups = append(groups, []*fleetRow{
			{Path: p, Transport: "MQTT", Unit: "frames/s", run: nb("MQTT"),
				Roles: map[string]string{"sender": "agent, uplink mqtt://", "broker": "mosquitto"}},
			{Path: p, Transport: "WebSocket", Unit: "frames/s", run: nb("WebSocket"),
				Roles: map[string]string{"sender": "agent, uplink ws://", "receiver": "agent storing"}},
			{Path: p, Transport: "HTTP", Unit: "frames/s", run: nb("HTTP"),
				Roles: map[string]string{"sender": "agent, uplink http://", "receiver": "agent storing"}}})
	}
	for _, n := range clients {
		dl := func(viaMQTT bool) func(context.Context, int) (fleetRun, error) {
			return func(ctx context.Context, _ int) (fleetRun, error) { return f.delegations(ctx, viaMQTT, n, tasks) }
		}
		p := fmt.Sprintf("P2P delegations, %d concurrent", n)
		groups = append(groups, []*fleetRow{
			{Path: p, Transport: "MQTT", Unit: "tasks/s", run: dl(true),
				Roles: map[string]string{"requester": "agent", "executor": "agent", "broker": "mosquitto"}},
			{Path: p, Transport: "HTTP", Unit: "tasks/s", run: dl(false),
				Roles: map[string]string{"requester": "agent", "executor": "agent"}}})
	}
	return groups
}
