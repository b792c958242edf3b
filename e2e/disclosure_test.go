package e2e_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// TestSelectiveDisclosure (seed 002 §8.3.2): an executor of another system
// (so a high contract) whose task type declares which result fields the
// requester may see sends only those; the withheld fields are neither in
// the requester's answer nor anywhere in its data file, and the executor's
// audit chain records the disclosure (peer, task, fields sent and
// withheld) and still verifies. A task type marked personal_data runs for
// a peer under a high contract and is rejected TP-NEG004 under a basic one.
func TestSelectiveDisclosure(t *testing.T) {
	dir := t.TempDir()
	fast := filepath.Join(dir, "fast.json")
	writeJSON(t, fast, map[string]any{"p2p": map[string]any{"heartbeat_interval_seconds": 1, "retry_base_delay_ms": 100}})
	a := startAgent(t, agentOpts{args: []string{"--config", fast}})
	aID, _ := identityOf(t, a)

	const secret, name, ward = "SECRET-DX-7781", "Jane-Roe-4410", "WARD-B12"
	record := []string{"/bin/sh", "-c", `cat >/dev/null; echo '{"name":"` + name + `","diagnosis":"` + secret + `","ward":"` + ward + `","status":"stable"}'`}
	patient := map[string]any{"task_type": "patient", "command": []string{"cat"}, "personal_data": true}
	executor := filepath.Join(dir, "executor.json")
	writeJSON(t, executor, map[string]any{"system_id": "clinic-b", "handlers": []any{
		map[string]any{"task_type": "record", "command": record, "disclose": []any{
			map[string]any{"peer": aID, "fields": []string{"ward", "status"}},
			map[string]any{"peer": "*", "fields": []string{"status"}},
		}},
		patient,
	}})
	sameSystem := filepath.Join(dir, "same.json")
	writeJSON(t, sameSystem, map[string]any{"handlers": []any{patient}})
	b := startAgent(t, agentOpts{args: []string{"--config", executor}})
	bID, _ := identityOf(t, b)
	pairBoth(t, a, b)
	const wait = 30 * time.Second

	_, id := a.submit(http.StatusCreated, `{"task_type":"record","payload":{"patient_ref":"p-1"},"target":"`+bID+`"}`)
	v := a.waitTask(id, wait, "completed", func(v taskView) bool { return v.Status == "completed" })
	var got map[string]any
	if err := json.Unmarshal([]byte(v.ResultJSON), &got); err != nil {
		t.Fatalf("result %q: %v", v.ResultJSON, err)
	}
	if len(got) != 2 || got["ward"] != ward || got["status"] != "stable" {
		t.Errorf("result on the requester %q, want only ward and status", v.ResultJSON)
	}
	if cs := contractsWith(t, a, bID); len(cs) == 0 || cs[0].Contract.SecurityLevel != "high" {
		t.Errorf("contracts %+v, want a high one", cs)
	}
	// The executor keeps the whole result.
	if r := b.call(http.MethodGet, prefix+"/task/"+id, nil); !strings.Contains(r.String(), secret) {
		t.Errorf("the task on the executor: %s, want the whole result", r)
	}

	// The audit record of the disclosure.
	r := b.call(http.MethodGet, prefix+"/audit?limit=1000", nil)
	var log struct {
		Records []struct {
			Kind   string         `json:"kind"`
			Peer   string         `json:"peer"`
			Detail map[string]any `json:"detail"`
		} `json:"records"`
	}
	if r.status != http.StatusOK || json.Unmarshal(r.body, &log) != nil {
		t.Fatalf("GET /audit: %s", r)
	}
	found := false
	for _, rec := range log.Records {
		if rec.Kind != "result_disclosed" || rec.Detail["task_id"] != id {
			continue
		}
		found = true
		sent, _ := json.Marshal(rec.Detail["fields_sent"])
		held, _ := json.Marshal(rec.Detail["fields_withheld"])
		if rec.Peer != aID || string(sent) != `["status","ward"]` || string(held) != `["diagnosis","name"]` ||
			rec.Detail["security_level"] != "high" || rec.Detail["task_type"] != "record" {
			t.Errorf("audit record %+v, want peer %s, sent [status ward], withheld [diagnosis name], high", rec, aID)
		}
	}
	if !found {
		t.Errorf("no result_disclosed record for task %s in %s", id, r)
	}

	t.Run("personal data needs a high contract", func(t *testing.T) {
		_, id := a.submit(http.StatusCreated, `{"task_type":"patient","payload":{"dob":"1970-01-01"},"target":"`+bID+`"}`)
		a.waitTask(id, wait, "completed under the high contract", func(v taskView) bool { return v.Status == "completed" })
		// No rule for this type, but a result under a high contract is audited.
		r := b.call(http.MethodGet, prefix+"/audit?limit=1000", nil)
		if !strings.Contains(r.String(), `"fields_sent":["dob"],"fields_withheld":[],"result_sha256"`) || !strings.Contains(r.String(), id) {
			t.Errorf("audit on the executor %s, want the disclosure of task %s (dob sent, nothing withheld)", r, id)
		}
		c := startAgent(t, agentOpts{args: []string{"--config", sameSystem}})
		cID, _ := identityOf(t, c)
		pairBoth(t, a, c)
		_, id = a.submit(http.StatusCreated, `{"task_type":"patient","payload":{"dob":"1970-01-01"},"target":"`+cID+`"}`)
		v := a.waitTask(id, wait, "rejected", func(v taskView) bool { return v.Status == "rejected" })
		if v.ErrorCode != string(wire.CodeNegSecurity) {
			t.Errorf("error_code %q, want %s", v.ErrorCode, wire.CodeNegSecurity)
		}
		if cs := contractsWith(t, a, cID); len(cs) == 0 || cs[0].Contract.SecurityLevel != "basic" {
			t.Errorf("contracts %+v, want a basic one", cs)
		}
	})

	// Nothing withheld is in the requester's data file; what was sent is.
	a.stop()
	raw, err := os.ReadFile(filepath.Join(a.dataDir, "synapse.db"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte(ward)) {
		t.Fatalf("the requester's data file lacks %q: the search below would prove nothing", ward)
	}
	for _, s := range []string{secret, name} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the requester's data file contains the withheld %q", s)
		}
	}
	b.stop()
	out, err := exec.Command(synapseBin, "audit", "verify", "--offline", "--data", b.dataDir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok:        true") {
		t.Errorf("synapse audit verify: %v\n%s", err, out)
	}
}
