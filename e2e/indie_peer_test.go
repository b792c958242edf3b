package e2e_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// indiePeer is a peer agent that someone else wrote: it is written from
// SPEC §2 (identity) and §3 (envelope, signature input, replay window)
// and the seeds (004's payloads and error codes, 000's numeric codes),
// and imports nothing of this module — its envelope, UUIDv7, Ed25519
// signer and HTTP server are its own — so the test shows what a foreign
// implementation sees of the agent's answers. It serves GET
// /api/v1/synapse/identity and takes envelopes at POST
// /api/v1/synapse/message, verifying each with the key it pinned for the
// sender.
type indiePeer struct {
	t        *testing.T
	id       string
	system   string
	priv     ed25519.PrivateKey
	pub      ed25519.PublicKey
	srv      *http.Server
	endpoint string

	mu   sync.Mutex
	keys map[string]ed25519.PublicKey // pinned agents' keys
	got  []indieEnvelope              // envelopes received, verified
	bad  []string                     // what it refused and why
	// refuse, if set, answers a verified envelope with a TPError
	// instead of 202 when it returns a status.
	refuse func(e indieEnvelope) (status int, code string)
}

// indieEnvelope is SPEC §3's envelope, in JSON.
type indieEnvelope struct {
	TPVersion           string          `json:"tp_version"`
	MessageID           string          `json:"message_id"`
	MessageType         string          `json:"message_type"`
	Sender              indieRef        `json:"sender"`
	Receiver            indieRef        `json:"receiver"`
	Timestamp           string          `json:"timestamp"`
	CorrelationID       string          `json:"correlation_id,omitempty"`
	ProtocolContractRef string          `json:"protocol_contract_ref,omitempty"`
	Payload             json.RawMessage `json:"payload,omitempty"`
	Signature           string          `json:"signature,omitempty"`
}

type indieRef struct {
	AgentID  string `json:"agent_id"`
	SystemID string `json:"system_id,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}

// indieAnswer is the agent's HTTP answer to one envelope.
type indieAnswer struct {
	status int
	body   []byte
}

func (a indieAnswer) String() string { return fmt.Sprintf("%d %.400s", a.status, a.body) }

// errorCode is the TPError code of the answer ({"error":{"code"}}), if any.
func (a indieAnswer) errorCode() string {
	var b struct {
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	_ = json.Unmarshal(a.body, &b)
	return b.Error.Code
}

// signingInput is SPEC §3's: ten lines, the last the hex SHA-256 of the
// payload's bytes as they are in the envelope.
func (e *indieEnvelope) signingInput() []byte {
	sum := sha256.Sum256(e.Payload)
	return []byte(strings.Join([]string{"synapse-sig-v1", e.TPVersion, e.MessageID, e.MessageType,
		e.Sender.AgentID, e.Receiver.AgentID, e.Timestamp, e.CorrelationID, e.ProtocolContractRef,
		hex.EncodeToString(sum[:])}, "\n"))
}

// uuidV7 is RFC 9562's version 7: 48 bits of Unix milliseconds, then
// random bits, with the version and variant set.
func uuidV7() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var ms [8]byte
	binary.BigEndian.PutUint64(ms[:], uint64(time.Now().UnixMilli()))
	copy(b[:6], ms[2:])
	b[6], b[8] = b[6]&0x0f|0x70, b[8]&0x3f|0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// indieTime is SPEC §3's timestamp: RFC 3339, UTC, milliseconds.
func indieTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// startIndiePeer serves the peer on 127.0.0.1.
func startIndiePeer(t *testing.T, id, system string) *indiePeer {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p := &indiePeer{t: t, id: id, system: system, priv: priv, pub: pub, keys: map[string]ed25519.PublicKey{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.endpoint = "http://" + ln.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/synapse/identity", func(w http.ResponseWriter, _ *http.Request) {
		writeIndieJSON(w, http.StatusOK, map[string]string{"agent_id": p.id, "agent_name": "indie", "system_id": p.system,
			"public_key": base64.StdEncoding.EncodeToString(p.pub), "endpoint": p.endpoint, "protocol_version": "1.0.0"})
	})
	mux.HandleFunc("POST /api/v1/synapse/message", p.receive)
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		writeIndieJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{"code": "not_found", "message": "no such route", "retriable": false}})
	})
	p.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

func writeIndieJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// receive takes one envelope: signed by a pinned sender, within ±300 s.
func (p *indiePeer) receive(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	refuse := func(status int, code, why string) {
		p.mu.Lock()
		p.bad = append(p.bad, why)
		p.mu.Unlock()
		writeIndieJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": why, "retriable": false}})
	}
	var e indieEnvelope
	if err != nil || json.Unmarshal(body, &e) != nil || e.MessageID == "" {
		refuse(http.StatusBadRequest, "message_format_invalid", "not an envelope")
		return
	}
	p.mu.Lock()
	key := p.keys[e.Sender.AgentID]
	p.mu.Unlock()
	sig, err := base64.StdEncoding.DecodeString(e.Signature)
	if key == nil || err != nil || !ed25519.Verify(key, e.signingInput(), sig) {
		refuse(http.StatusUnauthorized, "TP-ID003", "bad signature or unknown sender on "+e.MessageType)
		return
	}
	if ts, err := time.Parse(time.RFC3339Nano, e.Timestamp); err != nil || time.Since(ts).Abs() > 300*time.Second {
		refuse(http.StatusUnauthorized, "TP-ID005", "timestamp "+e.Timestamp+" outside the replay window")
		return
	}
	p.mu.Lock()
	p.got = append(p.got, e)
	hook := p.refuse
	p.mu.Unlock()
	if hook != nil {
		if status, code := hook(e); status != 0 {
			writeIndieJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": "refused by the test", "retriable": false}})
			return
		}
	}
	writeIndieJSON(w, http.StatusAccepted, map[string]any{"accepted": true, "message_id": e.MessageID})
}

// pin reads the agent's identity at base and pins its key.
func (p *indiePeer) pin(base string) string {
	p.t.Helper()
	resp, err := http.Get(base + "/api/v1/synapse/identity")
	if err != nil {
		p.t.Fatal(err)
	}
	defer resp.Body.Close()
	var id struct {
		AgentID   string `json:"agent_id"`
		PublicKey string `json:"public_key"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&id); err != nil {
		p.t.Fatalf("identity of %s: %v", base, err)
	}
	key, err := base64.StdEncoding.DecodeString(id.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		p.t.Fatalf("identity of %s: public key %q", base, id.PublicKey)
	}
	p.mu.Lock()
	p.keys[id.AgentID] = key
	p.mu.Unlock()
	return id.AgentID
}

// envelope builds and signs a JSON envelope for agent.
func (p *indiePeer) envelope(msgType, agent, contract string, payload any) []byte {
	p.t.Helper()
	pl, err := json.Marshal(payload)
	if err != nil {
		p.t.Fatal(err)
	}
	e := &indieEnvelope{TPVersion: "1.0.0", MessageID: uuidV7(), MessageType: msgType,
		Sender:   indieRef{AgentID: p.id, SystemID: p.system, Endpoint: p.endpoint},
		Receiver: indieRef{AgentID: agent}, Timestamp: indieTime(time.Now()), ProtocolContractRef: contract, Payload: pl}
	e.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(p.priv, e.signingInput()))
	b, err := json.Marshal(e)
	if err != nil {
		p.t.Fatal(err)
	}
	return b
}

// send posts one envelope to the agent at base.
func (p *indiePeer) send(base string, env []byte) indieAnswer {
	p.t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post(base+"/api/v1/synapse/message", "application/json", bytes.NewReader(env))
	if err != nil {
		p.t.Fatalf("POST /message: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return indieAnswer{status: resp.StatusCode, body: b}
}

// received are the envelopes of msgType about taskID (payload task_id,
// or task.id for a request) that the peer took, distinct by message id.
func (p *indiePeer) received(msgType, taskID string) []indieEnvelope {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := map[string]bool{}
	var out []indieEnvelope
	for _, e := range p.got {
		var pl struct {
			TaskID string `json:"task_id"`
			Task   struct {
				ID string `json:"id"`
			} `json:"task"`
		}
		_ = json.Unmarshal(e.Payload, &pl)
		if e.MessageType == msgType && (pl.TaskID == taskID || pl.Task.ID == taskID) && !seen[e.MessageID] {
			seen[e.MessageID] = true
			out = append(out, e)
		}
	}
	return out
}

// await polls, until timeout, for the first envelope of msgType about
// taskID and decodes its payload into v.
func (p *indiePeer) await(msgType, taskID string, timeout time.Duration, v any) indieEnvelope {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if got := p.received(msgType, taskID); len(got) > 0 {
			if v != nil {
				if err := json.Unmarshal(got[0].Payload, v); err != nil {
					p.t.Fatalf("%s for %s: %v in %s", msgType, taskID, err, got[0].Payload)
				}
			}
			return got[0]
		}
		if time.Now().After(deadline) {
			p.mu.Lock()
			var types []string
			for _, e := range p.got {
				types = append(types, e.MessageType)
			}
			bad := p.bad
			p.mu.Unlock()
			p.t.Fatalf("no %s for task %s within %v; got %v, refused %v", msgType, taskID, timeout, types, bad)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
