package tier1cmd_test

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/cli"
	"github.com/synapse-edge/synapse/cli/internal/clitest"
	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/client/agenttest"
	"github.com/synapse-edge/synapse/tier1"
)

// p2pTier1Verbs are the verbs of the tier1, peer and outbox commands.
var p2pTier1Verbs = []string{
	"tier1 routines", "tier1 send", "tier1 export", "tier1 exports",
	"peer add", "peer list", "peer remove",
	"outbox list", "outbox retry", "outbox drop",
}

func TestTier1PeerOutboxHelp(t *testing.T) {
	for _, v := range p2pTier1Verbs {
		t.Run(v, func(t *testing.T) {
			code, out, errOut := clitest.Run(t, "", append(strings.Fields(v), "--help")...)
			if code != cli.ExitOK || errOut != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
			}
			if want := "Usage: synapse " + v; !strings.HasPrefix(out, want) {
				t.Errorf("stdout starts %q, want %q", clitest.FirstLine(out), want)
			}
			if !strings.Contains(out, "\nExamples:\n  synapse "+v) {
				t.Errorf("no example of %q:\n%s", v, out)
			}
			if !strings.Contains(out, "--agent URL") {
				t.Errorf("no agent flags:\n%s", out)
			}
			_, viaHelp, _ := clitest.Run(t, "", append([]string{"help"}, strings.Fields(v)...)...)
			if viaHelp != out {
				t.Errorf("synapse help %s differs from --help", v)
			}
		})
	}
	for _, c := range []struct{ cmd, verbs string }{
		{"tier1", "routines send export exports"},
		{"peer", "add list remove"},
		{"outbox", "list retry drop"},
	} {
		t.Run(c.cmd, func(t *testing.T) {
			code, out, _ := clitest.Run(t, "", c.cmd, "--help")
			if code != cli.ExitOK || !strings.HasPrefix(out, "Usage: synapse "+c.cmd+" VERB") {
				t.Fatalf("exit %d, stdout starts %q", code, clitest.FirstLine(out))
			}
			for _, v := range strings.Fields(c.verbs) {
				if !strings.Contains(out, "\n  "+v+" ") {
					t.Errorf("usage lacks verb %q:\n%s", v, out)
				}
			}
			_, main, _ := clitest.Run(t, "", "help")
			if !strings.Contains(main, "\n  "+c.cmd+" ") {
				t.Errorf("main usage lacks %q:\n%s", c.cmd, main)
			}
		})
	}
	t.Run("send flags", func(t *testing.T) {
		_, out, _ := clitest.Run(t, "", "tier1", "send", "--help")
		for _, want := range []string{"--rate N", "--batch N", "(default 100)", "--duration DURATION", "(default 10s)",
			"--frames N", "--devices N", "--metric NAME", "--http"} {
			if !strings.Contains(out, want) {
				t.Errorf("tier1 send --help lacks %q:\n%s", want, out)
			}
		}
	})
}

// TestTier1PeerOutboxUsageErrors checks that bad input is refused with
// exit code 2 before any request (the agent is a closed port).
func TestTier1PeerOutboxUsageErrors(t *testing.T) {
	agent := clitest.ClosedAgent(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"routines with argument", []string{"tier1", "routines", "x"}, `unexpected argument "x"`},
		{"send zero batch", []string{"tier1", "send", "--batch", "0"}, "--batch 0: must be between 1 and 100000"},
		{"send huge batch", []string{"tier1", "send", "--batch", "100001"}, "--batch 100001"},
		{"send negative rate", []string{"tier1", "send", "--rate", "-5"}, "--rate -5: must not be negative"},
		{"send no devices", []string{"tier1", "send", "--devices", "0"}, "--devices 0"},
		{"send no limit", []string{"tier1", "send", "--duration", "0"}, "give a limit: --duration or --frames"},
		{"send negative frames", []string{"tier1", "send", "--frames", "-1"}, "--frames -1"},
		{"send negative duration", []string{"tier1", "send", "--duration", "-1s"}, "--duration -1s"},
		{"send empty metric", []string{"tier1", "send", "--metric", ""}, "--metric must not be empty"},
		{"send bad rate", []string{"tier1", "send", "--rate", "fast"}, "invalid value"},
		{"send argument", []string{"tier1", "send", "now"}, `unexpected argument "now"`},
		{"export bad format", []string{"tier1", "export", "--format", "xml"}, `--format "xml": want jsonl or csv`},
		{"export bad since", []string{"tier1", "export", "--since", "yesterday"}, `--since "yesterday"`},
		{"export bad until", []string{"tier1", "export", "--until", "-1h"}, `--until "-1h"`},
		{"export empty routine", []string{"tier1", "export", "--routine", ""}, "--routine must not be empty"},
		{"peer add without endpoint", []string{"peer", "add"}, "missing argument: want ENDPOINT"},
		{"peer add bad scheme", []string{"peer", "add", "ftp://host:21"}, `bad ENDPOINT "ftp://host:21"`},
		{"peer add two endpoints", []string{"peer", "add", "a:1", "b:2"}, `unexpected argument "b:2"`},
		{"peer list with argument", []string{"peer", "list", "x"}, `unexpected argument "x"`},
		{"peer remove without id", []string{"peer", "remove"}, "missing argument: want AGENT_ID"},
		{"outbox list peer and url", []string{"outbox", "list", "--peer", "a", "--url", "http://h"}, "give --peer or --url, not both"},
		{"outbox retry nothing", []string{"outbox", "retry"}, "give one of: the ID of a message, --peer AGENT_ID, --url URL"},
		{"outbox retry id and peer", []string{"outbox", "retry", "m1", "--peer", "a"}, "give one of"},
		{"outbox retry peer and url", []string{"outbox", "retry", "--peer", "a", "--url", "http://h"}, "give one of"},
		{"outbox drop without id", []string{"outbox", "drop"}, "missing argument: want ID"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := clitest.Run(t, "", append(tt.args, "--agent", agent)...)
			clitest.WantUsage(t, code, out, errOut, tt.want)
		})
	}
}

func TestTier1PeerOutboxWithoutAgent(t *testing.T) {
	agent := clitest.ClosedAgent(t)
	for _, args := range [][]string{
		{"tier1", "routines"},
		{"tier1", "send", "--frames", "10"},
		{"tier1", "send", "--frames", "10", "--http"},
		{"tier1", "export"},
		{"tier1", "export", "--format", "csv"},
		{"peer", "add", "127.0.0.1:1"},
		{"peer", "list"},
		{"peer", "remove", "x"},
		{"outbox", "list"},
		{"outbox", "retry", "m1"},
		{"outbox", "drop", "m1"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, errOut := clitest.Run(t, "", append([]string{"--agent", agent}, args...)...)
			if code != cli.ExitFailure {
				t.Errorf("exit code = %d, want 1; stderr:\n%s", code, errOut)
			}
			if !strings.Contains(errOut, "hint: no agent answers at "+agent) {
				t.Errorf("stderr lacks the connection hint:\n%s", errOut)
			}
			if out != "" {
				t.Errorf("stdout = %q, want empty", out)
			}
		})
	}
}

// sendSummary is the --json summary of tier1 send.
type sendSummary struct {
	Transport       string  `json:"transport"`
	FramesSent      int64   `json:"frames_sent"`
	BatchesSent     int64   `json:"batches_sent"`
	Acknowledged    int64   `json:"acknowledged"`
	Refused         int64   `json:"refused"`
	Unacknowledged  int64   `json:"unacknowledged"`
	Duplicates      int64   `json:"duplicate_batches"`
	FirstError      string  `json:"first_error"`
	DurationSeconds float64 `json:"duration_seconds"`
	FramesPerSecond float64 `json:"frames_per_second"`
	AckP50          float64 `json:"ack_p50_ms"`
	AckP99          float64 `json:"ack_p99_ms"`
	BytesPerFrame   float64 `json:"bytes_per_frame"`
}

// telemetryFrame is a synapse.telemetry frame as the export writes it.
type telemetryFrame struct {
	DeviceID string   `json:"device_id"`
	Seq      uint64   `json:"seq"`
	TS       int64    `json:"ts"`
	Metric   string   `json:"metric"`
	Value    *float64 `json:"value"`
	Unit     *string  `json:"unit"`
}

func TestE2ETier1(t *testing.T) {
	a := clitest.Agent(t, &synapseBin)
	const devices, frames = 7, 5000
	start := time.Now()

	t.Run("routines", func(t *testing.T) {
		d := tier1.Telemetry()
		out := clitest.Must(t, a, "", "tier1", "routines")
		want := "synapse.telemetry  1.0.0    " + d.Hash() + "  device_id:str seq:uint ts:int[ns] metric:str value:float unit:str?"
		if !strings.Contains(out, want) {
			t.Errorf("routines lack\n%s\ngot:\n%s", want, out)
		}
		got := clitest.Decode[struct{ Routines []client.Tier1Routine }](t, clitest.Must(t, a, "", "tier1", "routines", "--json"))
		if len(got.Routines) == 0 || got.Routines[0].CapabilityID != d.CapabilityID || got.Routines[0].Hash != d.Hash() ||
			len(got.Routines[0].Fields) != len(d.Fields) {
			t.Errorf("routines --json = %+v, want synapse.telemetry with hash %s", got.Routines, d.Hash())
		}
	})

	t.Run("send", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "send", "--frames", strconv.Itoa(frames), "--batch", "100",
			"--devices", strconv.Itoa(devices), "--json")
		sum := clitest.Decode[sendSummary](t, out)
		if sum.Transport != "websocket" || sum.FramesSent != frames || sum.BatchesSent != frames/100 ||
			sum.Acknowledged != frames || sum.Refused != 0 || sum.Unacknowledged != 0 || sum.FirstError != "" || sum.Duplicates != 0 {
			t.Errorf("summary = %+v, want %d frames in %d batches over websocket, all acknowledged", sum, frames, frames/100)
		}
		// A frame is about 35 bytes of msgpack; the batch and WebSocket
		// headers add a few per batch.
		if sum.BytesPerFrame < 30 || sum.BytesPerFrame > 45 || sum.FramesPerSecond <= 0 || sum.DurationSeconds <= 0 ||
			sum.AckP50 <= 0 || sum.AckP99 < sum.AckP50 {
			t.Errorf("implausible figures: %+v", sum)
		}
	})

	t.Run("export jsonl", func(t *testing.T) {
		code, out, errOut := clitest.At(t, a, "", "tier1", "export", "--format", "jsonl")
		if code != cli.ExitOK {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		if want := "exported 5,000 frames of synapse.telemetry"; !strings.Contains(errOut, want) {
			t.Errorf("stderr = %q, want %q", errOut, want)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != frames {
			t.Fatalf("got %d lines, want %d", len(lines), frames)
		}
		lastSeq := map[string]uint64{}
		for i, line := range lines {
			var f telemetryFrame
			if err := json.Unmarshal([]byte(line), &f); err != nil {
				t.Fatalf("line %d %q: %v", i+1, line, err)
			}
			if f.Metric != "temperature" || f.Value == nil || f.Unit != nil || f.TS < start.UnixNano() {
				t.Fatalf("line %d = %s: want metric temperature, a value, no unit, ts after the start", i+1, line)
			}
			if f.Seq != lastSeq[f.DeviceID]+1 {
				t.Fatalf("line %d: %s seq %d after %d", i+1, f.DeviceID, f.Seq, lastSeq[f.DeviceID])
			}
			lastSeq[f.DeviceID] = f.Seq
		}
		// Devices take turns: frame i belongs to device i mod 7.
		for d := range devices {
			id := "dev-000" + strconv.Itoa(d+1)
			want := uint64(frames / devices)
			if d < frames%devices {
				want++
			}
			if lastSeq[id] != want {
				t.Errorf("%s has %d frames, want %d", id, lastSeq[id], want)
			}
		}
		if len(lastSeq) != devices {
			t.Errorf("devices %v, want dev-0001 to dev-000%d", lastSeq, devices)
		}
	})

	t.Run("export csv", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "export", "--format", "csv")
		rows, err := csv.NewReader(strings.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != frames+1 {
			t.Fatalf("got %d rows, want a header and %d", len(rows), frames)
		}
		if got, want := strings.Join(rows[0], ","), "device_id,seq,ts,metric,value,unit"; got != want {
			t.Errorf("header = %q, want %q", got, want)
		}
		for i, r := range rows[1:] {
			if _, err := strconv.ParseInt(r[2], 10, 64); err != nil || r[3] != "temperature" || r[5] != "" || !strings.HasPrefix(r[0], "dev-000") {
				t.Fatalf("row %d = %q", i+1, r)
			}
			if _, err := strconv.ParseFloat(r[4], 64); err != nil {
				t.Fatalf("row %d value %q: %v", i+1, r[4], err)
			}
		}
	})

	t.Run("export filters", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "export", "--device", "dev-0003")
		if got, want := strings.Count(out, "\n"), frames/devices; got != want || strings.Contains(out, "dev-0001") {
			t.Errorf("--device dev-0003 gave %d lines, want %d of that device only", got, want)
		}
		future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
		if out := clitest.Must(t, a, "", "tier1", "export", "--since", future); out != "" {
			t.Errorf("--since %s gave %q, want nothing", future, clitest.FirstLine(out))
		}
		if out := clitest.Must(t, a, "", "tier1", "export", "--until", strconv.FormatInt(start.UnixNano(), 10)); out != "" {
			t.Errorf("--until the start gave %q, want nothing", clitest.FirstLine(out))
		}
		out = clitest.Must(t, a, "", "tier1", "export", "--since", "1h", "--format", "csv")
		if got := strings.Count(out, "\n"); got != frames+1 {
			t.Errorf("--since 1h gave %d CSV lines, want %d", got, frames+1)
		}
	})

	t.Run("export to a file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "frames.jsonl")
		code, out, errOut := clitest.At(t, a, "", "tier1", "export", "--out", path)
		if code != cli.ExitOK || out != "" || !strings.Contains(errOut, "exported 5,000 frames of synapse.telemetry to "+path) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, clitest.FirstLine(out), errOut)
		}
		if got := countLines(t, path); got != frames {
			t.Errorf("%s has %d lines, want %d", path, got, frames)
		}
		entries, _ := os.ReadDir(filepath.Dir(path))
		if len(entries) != 1 {
			t.Errorf("the output directory holds %d files, want only the export", len(entries))
		}
	})

	t.Run("send over HTTP", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "send", "--http", "--frames", "1000", "--batch", "64", "--metric", "humidity", "--unit", "%")
		for _, want := range []string{"sent:", "1,000 frames in 16 batches over http", "acknowledged: 1,000 frames", "refused:      0 frames",
			"mean rate:", "ack latency:  p50", "bytes/frame"} {
			if !strings.Contains(out, want) {
				t.Errorf("summary lacks %q:\n%s", want, out)
			}
		}
		csvOut := clitest.Must(t, a, "", "tier1", "export", "--format", "csv")
		if got := strings.Count(csvOut, ",humidity,"); got != 1000 {
			t.Errorf("%d humidity rows, want 1000", got)
		}
		if got := strings.Count(csvOut, ",%\n"); got != 1000 {
			t.Errorf("%d rows with unit %%, want 1000", got)
		}
	})

	t.Run("unknown routine", func(t *testing.T) {
		code, _, errOut := clitest.At(t, a, "", "tier1", "export", "--routine", "acme.none")
		if code != cli.ExitFailure || !strings.Contains(errOut, "acme.none") {
			t.Errorf("exit %d, stderr %q; want 1 naming the routine", code, errOut)
		}
		code, _, errOut = clitest.At(t, a, "", "tier1", "export", "--routine", "acme.none", "--format", "csv")
		if code != cli.ExitFailure || !strings.Contains(errOut, `no routine "acme.none"`) {
			t.Errorf("csv: exit %d, stderr %q; want 1 naming the routine", code, errOut)
		}
	})

	t.Run("token without the scope", func(t *testing.T) {
		tok := clitest.Decode[client.TokenCreated](t, clitest.Must(t, a, "", "token", "create", "reader", "--scope", "tier1:read", "--json"))
		for _, http := range []string{"", "--http"} {
			args := []string{"--agent", a.URL, "--token", tok.Token, "tier1", "send", "--frames", "10000", "--batch", "10"}
			if http != "" {
				args = append(args, http)
			}
			code, out, errOut := clitest.Run(t, "", args...)
			if code != cli.ExitFailure || out != "" || !strings.Contains(errOut, "(403)") || !strings.Contains(errOut, "hint: the token lacks the scope") {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1 with the 403 error and its hint", args, code, out, errOut)
			}
		}
	})
}

// TestE2ETier1Refused runs an agent that takes batches of at most 1000
// bytes: HTTP batches of 100 frames are refused, a WebSocket carrying one
// is closed by the agent, and a user routine is exported as an empty CSV.
func TestE2ETier1Refused(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	body := `{"tier1":{"max_batch_bytes":1000,"routines":[{"capability_id":"acme.vibration","version":"2.1.0",
		"name":"Vibration","description":"x","fields":[{"name":"sensor","type":"str"},{"name":"rms","type":"float","unit":"mm/s"},
		{"name":"note","type":"str","optional":true}]}]}}`
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	a := agenttest.Start(t, synapseBin.Path(t), agenttest.Options{Args: []string{"--config", cfg}})

	t.Run("http", func(t *testing.T) {
		code, out, errOut := clitest.At(t, a, "", "tier1", "send", "--http", "--frames", "500")
		if code != cli.ExitFailure {
			t.Errorf("exit %d, want 1", code)
		}
		for _, want := range []string{"refused:      500 frames", "first error:  batch ", "payload_too_large"} {
			if !strings.Contains(out, want) {
				t.Errorf("summary lacks %q:\n%s", want, out)
			}
		}
		if !strings.Contains(errOut, "synapse tier1 send: 500 frames refused; first error: batch ") {
			t.Errorf("stderr = %q", errOut)
		}
	})

	t.Run("websocket", func(t *testing.T) {
		// The agent closes the stream at the first batch, before any
		// answer: the error alone is printed, without a summary. The
		// client sees the close frame (1009, message too big) or, when
		// its next write lands after the agent closed, a reset or a broken pipe.
		code, out, errOut := clitest.At(t, a, "", "tier1", "send", "--frames", "500", "--json")
		closed := strings.Contains(errOut, "1009") || strings.Contains(errOut, "connection reset") || strings.Contains(errOut, "broken pipe")
		if code != cli.ExitFailure || !strings.Contains(errOut, "frames unacknowledged") || !closed {
			t.Errorf("exit %d, stderr %q; want 1, frames unacknowledged and the stream closed (1009, reset or broken pipe)", code, errOut)
		}
		if out != "" {
			t.Errorf("stdout = %q, want empty", out)
		}
	})

	t.Run("small batches pass", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "send", "--frames", "500", "--batch", "10")
		if !strings.Contains(out, "acknowledged: 500 frames") {
			t.Errorf("summary:\n%s", out)
		}
	})

	t.Run("user routine", func(t *testing.T) {
		out := clitest.Must(t, a, "", "tier1", "routines")
		if !strings.Contains(out, "acme.vibration     2.1.0    sha256:") || !strings.Contains(out, "sensor:str rms:float[mm/s] note:str?") {
			t.Errorf("routines:\n%s", out)
		}
		code, out, errOut := clitest.At(t, a, "", "tier1", "export", "--routine", "acme.vibration", "--format", "csv")
		if code != cli.ExitOK || out != "sensor,rms,note\n" || !strings.Contains(errOut, "exported 0 frames") {
			t.Errorf("exit %d, stdout %q, stderr %q; want the header only", code, out, errOut)
		}
	})
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}
