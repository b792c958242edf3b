package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestBatchIDAndCount(t *testing.T) {
	g := newGenerator(1)
	for _, n := range []int{1, 15, 16, 100, 1000} {
		b := g.batches(0, n, n, "u")[0]
		id, got, err := batchIDAndCount(b)
		if err != nil || got != n || id != "u-0" {
			t.Fatalf("%d frames: got %q, %d, %v; want u-0, %d", n, id, got, err, n)
		}
		for cut := 1; cut < len(b); cut += max(1, len(b)/50) {
			if _, _, err := batchIDAndCount(b[:cut]); err == nil {
				t.Fatalf("%d frames cut at %d of %d bytes: no error", n, cut, len(b))
			}
		}
	}
	if _, _, err := batchIDAndCount([]byte{0x93, 0xa1, 'x', 0xa1, 'y', 0x90}); !errors.Is(err, errNotBatch) {
		t.Fatalf("a batch of 3 elements: got %v, want errNotBatch", err)
	}
}

func TestFleetFlags(t *testing.T) {
	c, _, err := parseFlags([]string{"-fleet", "-synapse-bin", "s", "-mosquitto-bin", "m", "-clients", "1, 4,16"}, io.Discard)
	if err != nil || !c.Fleet || len(c.ClientCounts) != 3 || c.ClientCounts[1] != 4 || c.RunTime != 4*time.Second || len(c.NBBatches) != 3 {
		t.Fatalf("got %+v, %v", c, err)
	}
	for _, args := range [][]string{
		{"-fleet"},
		{"-fleet", "-synapse-bin", "s", "-mosquitto-bin", "m", "-clients", "0"},
		{"-fleet", "-synapse-bin", "s", "-mosquitto-bin", "m", "-nb-batch", "0"},
		{"-fleet", "-synapse-bin", "s", "-mosquitto-bin", "m", "-run-time", "0s"},
		{"-fleet", "-synapse-bin", "s", "-mosquitto-bin", "m", "-only", "south"},
	} {
		var out strings.Builder
		if _, _, err := parseFlags(args, &out); !errors.Is(err, errUsage) || out.Len() == 0 {
			t.Errorf("%q: got %v and %q, want a usage error that says why", args, err, out.String())
		}
	}
}

func TestFleetTable(t *testing.T) {
	r := &fleetResults{runInfo: runInfo{Config: config{Rounds: 1, NBRunBatches: 2, NBBatches: []int{5}, Delegations: 3, RunTime: time.Second}},
		Mosquitto: mosquittoOptions()}
	r.Rows = []*fleetRow{
		{Path: "nb", Transport: "MQTT", Unit: "frames/s", Runs: []fleetRun{{Units: 10, Rate: 300, IngestRate: 600, CPU: map[string]float64{"sender": 0.001}}},
			Roles: map[string]string{"sender": "agent"}},
		{Path: "nb", Transport: "HTTP", Unit: "frames/s", Runs: []fleetRun{{Units: 10, Rate: 100, IngestRate: 500}}},
	}
	r.summarize()
	var out strings.Builder
	r.writeTable(&out)
	for _, want := range []string{"| nb | MQTT | 300 frames/s | 3.00× |", "sender (agent) 100.0 µs", "set_tcp_nodelay true"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
