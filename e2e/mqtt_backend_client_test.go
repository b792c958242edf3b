package e2e_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// cloudBackend is a cloud service that submits tasks to agents through
// the broker without being an agent itself. It is written from the
// README's "Commands from a cloud backend" and the formats it points to
// (the inbox frame, SPEC §3's envelope and signature), and imports
// nothing of this module: its frame codec, envelope and signer are its
// own, so the test shows the protocol can be implemented from the
// documents.
type cloudBackend struct {
	t        *testing.T
	id       string // its agent_id on the broker
	system   string // its system_id (the agent's, for a basic contract)
	prefix   string // topic prefix, "synapse"
	priv     ed25519.PrivateKey
	pub      ed25519.PublicKey
	c        paho.Client
	identity []byte // its identity document (JSON)

	mu      sync.Mutex
	pending map[string]chan backendFrame // answers awaited, by frame id
	keys    map[string]ed25519.PublicKey // pinned agents' keys
	got     []backendEnvelope            // envelopes agents sent it, verified
	bad     []string                     // what it refused and why
	events  []backendEvent               // task events it saw
}

// backendFrame is one message of an inbox topic (the README's frame).
type backendFrame struct {
	typ    byte // 1 request, 2 answer
	id     string
	from   string
	status int
	ctype  string
	header map[string]string
	body   []byte
}

// encode writes the frame: "SYNQ", version 1, type, then length-prefixed
// id, sender, status (2 bytes), content type, headers and body.
func (f backendFrame) encode() []byte {
	b := append([]byte("SYNQ"), 1, f.typ, byte(len(f.id)))
	b = append(b, f.id...)
	b = append(b, byte(len(f.from)))
	b = append(b, f.from...)
	b = binary.BigEndian.AppendUint16(b, uint16(f.status))
	b = append(b, byte(len(f.ctype)))
	b = append(b, f.ctype...)
	b = append(b, byte(len(f.header)))
	for k, v := range f.header {
		b = append(b, byte(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint16(b, uint16(len(v)))
		b = append(b, v...)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(f.body)))
	return append(b, f.body...)
}

var errBackendFrame = errors.New("not an inbox frame")

func decodeBackendFrame(b []byte) (backendFrame, error) {
	var f backendFrame
	take := func(n int) []byte {
		if n > len(b) {
			b = nil
			return nil
		}
		v := b[:n]
		b = b[n:]
		return v
	}
	str := func(lenBytes int) (string, bool) {
		l := take(lenBytes)
		if l == nil {
			return "", false
		}
		n := int(l[0])
		if lenBytes == 2 {
			n = int(binary.BigEndian.Uint16(l))
		}
		v := take(n)
		return string(v), v != nil || n == 0
	}
	if h := take(6); h == nil || string(h[:4]) != "SYNQ" || h[4] != 1 {
		return f, errBackendFrame
	} else {
		f.typ = h[5]
	}
	var ok bool
	if f.id, ok = str(1); !ok {
		return f, errBackendFrame
	}
	if f.from, ok = str(1); !ok {
		return f, errBackendFrame
	}
	st := take(2)
	if st == nil {
		return f, errBackendFrame
	}
	f.status = int(binary.BigEndian.Uint16(st))
	if f.ctype, ok = str(1); !ok {
		return f, errBackendFrame
	}
	nh := take(1)
	if nh == nil {
		return f, errBackendFrame
	}
	f.header = map[string]string{}
	for range int(nh[0]) {
		k, ok1 := str(1)
		v, ok2 := str(2)
		if !ok1 || !ok2 {
			return f, errBackendFrame
		}
		f.header[k] = v
	}
	nb := take(4)
	if nb == nil || int(binary.BigEndian.Uint32(nb)) != len(b) {
		return f, errBackendFrame
	}
	f.body = b
	return f, nil
}

// backendEnvelope is SPEC §3's envelope, in JSON.
type backendEnvelope struct {
	TPVersion           string          `json:"tp_version"`
	MessageID           string          `json:"message_id"`
	MessageType         string          `json:"message_type"`
	Sender              backendRef      `json:"sender"`
	Receiver            backendRef      `json:"receiver"`
	Timestamp           string          `json:"timestamp"`
	CorrelationID       string          `json:"correlation_id,omitempty"`
	ProtocolContractRef string          `json:"protocol_contract_ref,omitempty"`
	Payload             json.RawMessage `json:"payload,omitempty"`
	Signature           string          `json:"signature,omitempty"`
}

type backendRef struct {
	AgentID  string `json:"agent_id"`
	SystemID string `json:"system_id,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
}

// signingInput is SPEC §3's: ten lines, the last the hex SHA-256 of the
// payload's bytes as they are in the envelope.
func (e *backendEnvelope) signingInput() []byte {
	sum := sha256.Sum256(e.Payload)
	return []byte(strings.Join([]string{"synapse-sig-v1", e.TPVersion, e.MessageID, e.MessageType,
		e.Sender.AgentID, e.Receiver.AgentID, e.Timestamp, e.CorrelationID, e.ProtocolContractRef,
		hex.EncodeToString(sum[:])}, "\n"))
}

func (e *backendEnvelope) sign(priv ed25519.PrivateKey) {
	e.Signature = base64.StdEncoding.EncodeToString(ed25519.Sign(priv, e.signingInput()))
}

func (e *backendEnvelope) verify(pub ed25519.PublicKey) bool {
	sig, err := base64.StdEncoding.DecodeString(e.Signature)
	return err == nil && ed25519.Verify(pub, e.signingInput(), sig)
}

// backendEvent is one task event of {prefix}/{system_id}/{agent_id}/events.
type backendEvent struct {
	TaskID    string          `json:"task_id"`
	Seq       int64           `json:"seq"`
	EventType string          `json:"event_type"`
	Data      json.RawMessage `json:"data"`
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80 // version 4, RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// startBackend connects the backend to the broker at addr with a
// persistent session and subscribes to its inbox and to the task events
// of the agents of its system.
func startBackend(t *testing.T, addr, id, system string) *cloudBackend {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b := &cloudBackend{t: t, id: id, system: system, prefix: "synapse", priv: priv, pub: pub,
		pending: map[string]chan backendFrame{}, keys: map[string]ed25519.PublicKey{}}
	b.identity, _ = json.Marshal(map[string]string{"agent_id": id, "agent_name": "cloud backend", "system_id": system,
		"public_key": base64.StdEncoding.EncodeToString(pub), "endpoint": "mqtt:///" + id, "protocol_version": "1.0.0"})
	subscribed := make(chan error, 1)
	o := paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID(id).SetCleanSession(false).
		SetAutoReconnect(true).SetConnectRetry(true).SetConnectRetryInterval(100 * time.Millisecond).
		SetMaxReconnectInterval(300 * time.Millisecond).
		SetOnConnectHandler(func(c paho.Client) {
			tok := c.SubscribeMultiple(map[string]byte{
				b.prefix + "/agents/" + id + "/inbox": 1,
				b.prefix + "/" + system + "/+/events": 1,
			}, b.onMessage)
			go func() {
				tok.Wait()
				select {
				case subscribed <- tok.Error():
				default:
				}
			}()
		})
	b.c = paho.NewClient(o)
	if tok := b.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("backend connect: %v", tok.Error())
	}
	select {
	case err := <-subscribed:
		if err != nil {
			t.Fatalf("backend subscribe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("backend: no subscription within 10 s")
	}
	t.Cleanup(func() { b.c.Disconnect(100) })
	return b
}

func (b *cloudBackend) onMessage(_ paho.Client, m paho.Message) {
	if strings.HasSuffix(m.Topic(), "/events") {
		var ev backendEvent
		b.mu.Lock()
		defer b.mu.Unlock()
		if err := json.Unmarshal(m.Payload(), &ev); err != nil {
			b.bad = append(b.bad, "event: "+err.Error())
			return
		}
		b.events = append(b.events, ev)
		return
	}
	f, err := decodeBackendFrame(m.Payload())
	if err != nil {
		b.mu.Lock()
		b.bad = append(b.bad, "frame: "+err.Error())
		b.mu.Unlock()
		return
	}
	if f.typ == 2 {
		b.mu.Lock()
		ch := b.pending[f.id]
		b.mu.Unlock()
		if ch != nil {
			select {
			case ch <- f:
			default:
			}
		}
		return
	}
	b.answerRequest(f)
}

// answerRequest answers a request of an agent: a fetch of the identity
// document (pairing), or an envelope, verified with the agent's pinned
// key and acknowledged (the agent's outbox keeps it until then).
func (b *cloudBackend) answerRequest(f backendFrame) {
	status, body := 200, []byte(nil)
	if path, ok := f.header["X-Synapse-Fetch"]; ok {
		if path == "/api/v1/synapse/identity" {
			body = b.identity
		} else {
			status, body = 404, []byte(`{"error":{"code":"not_found","message":"a cloud backend has no `+path+`"}}`)
		}
	} else {
		var e backendEnvelope
		err := json.Unmarshal(f.body, &e)
		b.mu.Lock()
		key := b.keys[e.Sender.AgentID]
		switch {
		case err != nil:
			status, body = 400, []byte(`{"error":{"code":"message_format_invalid","message":"not a JSON envelope"}}`)
			b.bad = append(b.bad, "envelope: "+err.Error())
		case key == nil || !e.verify(key):
			status, body = 401, []byte(`{"error":{"code":"TP-ID003","message":"unknown sender or bad signature"}}`)
			b.bad = append(b.bad, fmt.Sprintf("%s from %s: signature", e.MessageType, e.Sender.AgentID))
		default:
			b.got = append(b.got, e)
			body, _ = json.Marshal(map[string]any{"accepted": true, "message_id": e.MessageID})
		}
		b.mu.Unlock()
	}
	out := backendFrame{typ: 2, id: f.id, from: b.id, status: status, ctype: "application/json", body: body}
	b.c.Publish(b.prefix+"/agents/"+f.from+"/inbox", 1, false, out.encode())
}

// request publishes a request frame to an agent's inbox and waits for its
// answer; ok is false when none came within wait.
func (b *cloudBackend) request(agent string, header map[string]string, body []byte, wait time.Duration) (backendFrame, bool) {
	id := newUUID()
	ch := make(chan backendFrame, 1)
	b.mu.Lock()
	b.pending[id] = ch
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		delete(b.pending, id)
		b.mu.Unlock()
	}()
	f := backendFrame{typ: 1, id: id, from: b.id, ctype: "application/json", header: header, body: body}
	b.c.Publish(b.prefix+"/agents/"+agent+"/inbox", 1, false, f.encode())
	select {
	case a := <-ch:
		return a, true
	case <-time.After(wait):
		return backendFrame{}, false
	}
}

// pin fetches an agent's identity through its inbox and keeps its key.
func (b *cloudBackend) pin(agent string) bool {
	a, ok := b.request(agent, map[string]string{"X-Synapse-Fetch": "/api/v1/synapse/identity"}, nil, time.Second)
	var id struct {
		AgentID   string `json:"agent_id"`
		PublicKey string `json:"public_key"`
	}
	if !ok || a.status != 200 || json.Unmarshal(a.body, &id) != nil || id.AgentID != agent {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(id.PublicKey)
	if err != nil || len(key) != ed25519.PublicKeySize {
		return false
	}
	b.mu.Lock()
	b.keys[agent] = key
	b.mu.Unlock()
	return true
}

// envelope makes a signed envelope for agent.
func (b *cloudBackend) envelope(msgType, agent, contract string, payload any, priv ed25519.PrivateKey) *backendEnvelope {
	p, err := json.Marshal(payload)
	if err != nil {
		b.t.Fatal(err)
	}
	e := &backendEnvelope{TPVersion: "1.0.0", MessageID: newUUID(), MessageType: msgType,
		Sender:    backendRef{AgentID: b.id, SystemID: b.system, Endpoint: "mqtt:///" + b.id},
		Receiver:  backendRef{AgentID: agent},
		Timestamp: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), ProtocolContractRef: contract, Payload: p}
	e.sign(priv)
	return e
}

// send publishes e to agent's inbox and returns the answer frame.
func (b *cloudBackend) send(agent string, e *backendEnvelope) backendFrame {
	b.t.Helper()
	body, err := json.Marshal(e)
	if err != nil {
		b.t.Fatal(err)
	}
	a, ok := b.request(agent, nil, body, 10*time.Second)
	if !ok {
		b.t.Fatalf("%s to %s: no answer within 10 s", e.MessageType, agent)
	}
	return a
}

// received lists the verified envelopes of a type about a task, one per
// message id (the agent may send one again after a lost answer).
func (b *cloudBackend) received(msgType, taskID string) []backendEnvelope {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backendEnvelope
	seen := map[string]bool{}
	for _, e := range b.got {
		var p struct {
			TaskID string `json:"task_id"`
		}
		if e.MessageType != msgType || seen[e.MessageID] || json.Unmarshal(e.Payload, &p) != nil || p.TaskID != taskID {
			continue
		}
		seen[e.MessageID] = true
		out = append(out, e)
	}
	return out
}

// taskEvents lists the events seen for a task.
func (b *cloudBackend) taskEvents(taskID string) []backendEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backendEvent
	for _, e := range b.events {
		if e.TaskID == taskID {
			out = append(out, e)
		}
	}
	return out
}
