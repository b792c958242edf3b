package contracts_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/internal/testutil"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
	"github.com/synapse-edge/synapse/wire/encrypt"
)

// sealFor returns an edit that seals the message's payload for n as a
// high contract asks, flipping one ciphertext byte when tamper is set.
func sealFor(t *testing.T, n *peerNode, contractID string, tamper bool) func(m *wire.UnifiedSynapseMessage) {
	return func(m *wire.UnifiedSynapseMessage) {
		raw, err := base64.StdEncoding.DecodeString(n.a.Identity().PublicKey)
		if err != nil {
			t.Fatal(err)
		}
		pub, err := encrypt.X25519PublicKey(ed25519.PublicKey(raw))
		if err != nil {
			t.Fatal(err)
		}
		ep, err := encrypt.SealPayload(pub, m.Payload.Bytes(), "", encrypt.EncryptionAAD(m, ""))
		if err != nil {
			t.Fatal(err)
		}
		if tamper {
			ct, _ := base64.StdEncoding.DecodeString(ep.Ciphertext)
			ct[len(ct)/2] ^= 0x01
			ep.Ciphertext = base64.StdEncoding.EncodeToString(ct)
		}
		if m.Payload, err = wire.NewJSONPayload(ep); err != nil {
			t.Fatal(err)
		}
		m.ContentType, m.ProtocolContractRef = encrypt.ContentEncrypted, contractID
	}
}

// TestHighAcrossSystems: agents of two systems get a high contract
// although basic was asked; a task delegated afterwards crosses the
// network encrypted both ways and completes; tampered ciphertext and
// plaintext are refused and create nothing.
func TestHighAcrossSystems(t *testing.T) {
	a := startPeer(t, "patient", inSystem("patients"))
	b := startPeer(t, "hospital", inSystem("hospital"))
	tap := newWireTap(t, b.url())
	if _, _, err := a.a.Pairing().AddPeer(context.Background(), tap.srv.URL); err != nil { // a reaches b through the tap
		t.Fatal(err)
	}
	if _, _, err := b.a.Pairing().AddPeer(context.Background(), a.url()); err != nil {
		t.Fatal(err)
	}
	ci := negotiated(t, a, b, negotiate.Request{PreferredSecurityLevel: negotiate.Basic})
	c := ci.Contract
	if c.SecurityLevel != negotiate.High || !strings.Contains(c.NegotiationTrace[1].Note, "security raised from basic to high") {
		t.Fatalf("contract = %s (%q), want high, raised from basic", c, c.NegotiationTrace[1].Note)
	}

	const marker = "plaintext-marker-7731"
	task := submitTo(t, a, b, "echo", `{"diagnosis":"`+marker+`"}`)
	got := waitFinal(t, a.a, task.ID)
	if got.Status != wire.StatusCompleted || !jsonEqual(t, got.Result, []byte(`{"diagnosis":"`+marker+`"}`)) {
		t.Fatalf("task is %s with result %s, want completed with the echoed payload", describe(got), got.Result)
	}
	t.Run("the task request crossed the wire encrypted", func(t *testing.T) {
		reqs := tap.envelopes(wire.MsgTaskRequest)
		if len(reqs) == 0 {
			t.Fatal("no task_request went through the tap")
		}
		for _, body := range reqs {
			if bytes.Contains(body, []byte(marker)) {
				t.Errorf("the request on the wire contains the plaintext: %s", body)
			}
			m, err := wire.DecodeEnvelopeJSON(body)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := encrypt.DecodeEncryptedPayload(m.Payload)
			if m.ContentType != encrypt.ContentEncrypted || m.ProtocolContractRef != c.ContractID || err != nil || ep.Alg != encrypt.EncryptionAlg {
				t.Errorf("request content_type %q, contract ref %q, payload %s: want an encrypted payload under %s",
					m.ContentType, m.ProtocolContractRef, m.Payload.Bytes(), c.ContractID)
			}
		}
		if remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted); !jsonEqual(t, remote.Payload, []byte(`{"diagnosis":"`+marker+`"}`)) {
			t.Errorf("the executor's payload = %s, want it decrypted", remote.Payload)
		}
	})
	t.Run("the result came back encrypted", func(t *testing.T) {
		m, raw := received(t, a, wire.MsgTaskComplete)
		if bytes.Contains(raw, []byte(marker)) || m.ContentType != encrypt.ContentEncrypted || m.ProtocolContractRef != c.ContractID {
			t.Errorf("task_complete as received: %s", raw)
		}
	})

	now := time.Now()
	t.Run("a correctly sealed request is accepted (control)", func(t *testing.T) {
		id := uuid.Must(uuid.NewV7()).String()
		status, code := sendAs(t, a, b, wire.MsgTaskRequest, taskRequest(id, "echo", `{"x":1}`), now, sealFor(t, b, c.ContractID, false))
		if status != http.StatusAccepted || code != "" {
			t.Fatalf("answer %d %s, want 202", status, code)
		}
		waitStatus(t, b.a, id, wire.StatusCompleted)
	})
	t.Run("tampered ciphertext is TP-SEC003 and creates nothing", func(t *testing.T) {
		id := uuid.Must(uuid.NewV7()).String()
		status, code := sendAs(t, a, b, wire.MsgTaskRequest, taskRequest(id, "echo", `{"x":1}`), now, sealFor(t, b, c.ContractID, true))
		if status != http.StatusBadRequest || code != wire.CodeSecDecrypt {
			t.Fatalf("answer %d %s, want 400 TP-SEC003", status, code)
		}
		if _, err := b.a.Task(id); err == nil {
			t.Error("the executor created the task of a payload it could not decrypt")
		}
		// The failure, the contract and the decryptions are in b's audit
		// log, and its chain verifies.
		testutil.Eventually(t, 10*time.Second, "contract_made and decrypt_failed in b's audit log", func() bool {
			recs, err := b.a.AuditLog(0, 1000)
			kinds := map[string]bool{}
			for _, r := range recs {
				kinds[r.Kind] = true
			}
			return err == nil && kinds[agent.AuditContractMade] && kinds[agent.AuditDecryptFailed]
		})
		if rep, err := b.a.VerifyAudit(context.Background()); err != nil || !rep.OK || rep.Records < 2 {
			t.Errorf("VerifyAudit = %+v, %v", rep, err)
		}
	})
	t.Run("plaintext under a high contract is TP-NEG004", func(t *testing.T) {
		id := uuid.Must(uuid.NewV7()).String()
		status, code := sendAs(t, a, b, wire.MsgTaskRequest, taskRequest(id, "echo", `{"x":1}`), now,
			func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = c.ContractID })
		if status != http.StatusConflict || code != wire.CodeNegSecurity {
			t.Fatalf("answer %d %s, want 409 TP-NEG004", status, code)
		}
		if _, err := b.a.Task(id); err == nil {
			t.Error("the executor created the task of a plaintext request")
		}
	})
	t.Run("goal consult is high in one system too", func(t *testing.T) {
		x := startPeer(t, "x")
		y := startPeer(t, "y")
		pair(t, x, y)
		if ci := negotiated(t, x, y, negotiate.Request{GoalType: negotiate.GoalConsult}); ci.Contract.SecurityLevel != negotiate.High {
			t.Errorf("consult contract is %s, want high", ci.Contract.SecurityLevel)
		}
	})
}

// TestStandardPrivateFields: under standard only the fields a task type
// marks private are encrypted, one by one.
func TestStandardPrivateFields(t *testing.T) {
	a := startPeer(t, "requester", func(c *agent.Config) { c.Negotiation.PrivateFields = map[string][]string{"echo": {"secret"}} })
	b := startPeer(t, "executor")
	pair(t, a, b)
	ci := negotiated(t, a, b, negotiate.Request{PreferredSecurityLevel: negotiate.Standard})
	c := ci.Contract
	if c.SecurityLevel != negotiate.Standard || len(c.PrivateFields["echo"]) != 1 {
		t.Fatalf("contract = %s private_fields %v, want standard with echo.secret", c, c.PrivateFields)
	}
	task := submitTo(t, a, b, "echo", `{"secret":"s3cr3t-value","public":"visible-value"}`)
	if got := waitFinal(t, a.a, task.ID); got.Status != wire.StatusCompleted {
		t.Fatalf("task is %s, want completed", describe(got))
	}
	m, raw := received(t, b, wire.MsgTaskRequest)
	if bytes.Contains(raw, []byte("s3cr3t-value")) || !bytes.Contains(raw, []byte("visible-value")) {
		t.Errorf("task_request as received: %s; want the private field encrypted and the other in clear", raw)
	}
	if fs := encrypt.PrivateFields(m.ContentType); len(fs) != 1 || fs[0] != "secret" || m.ProtocolContractRef != c.ContractID {
		t.Errorf("content_type %q ref %q, want private=\"secret\" under %s", m.ContentType, m.ProtocolContractRef, c.ContractID)
	}
	remote := waitStatus(t, b.a, task.ID, wire.StatusCompleted)
	if !jsonEqual(t, remote.Payload, []byte(`{"secret":"s3cr3t-value","public":"visible-value"}`)) {
		t.Errorf("the executor's payload = %s, want the field decrypted", remote.Payload)
	}
	t.Run("a private field in clear is TP-NEG004", func(t *testing.T) {
		id := uuid.Must(uuid.NewV7()).String()
		status, code := sendAs(t, a, b, wire.MsgTaskRequest, taskRequest(id, "echo", `{"secret":"oops"}`), time.Now(),
			func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = c.ContractID })
		if status != http.StatusConflict || code != wire.CodeNegSecurity {
			t.Fatalf("answer %d %s, want 409 TP-NEG004", status, code)
		}
	})
	t.Run("a private field that does not open is TP-SEC003", func(t *testing.T) {
		id := uuid.Must(uuid.NewV7()).String()
		bogus, _ := json.Marshal(encrypt.EncryptedPayload{Alg: encrypt.EncryptionAlg, EPK: base64.StdEncoding.EncodeToString(make([]byte, 32)),
			Nonce: base64.StdEncoding.EncodeToString(make([]byte, 12)), Ciphertext: base64.StdEncoding.EncodeToString(make([]byte, 20))})
		status, code := sendAs(t, a, b, wire.MsgTaskRequest, taskRequest(id, "echo", `{"secret":`+string(bogus)+`}`), time.Now(),
			func(m *wire.UnifiedSynapseMessage) {
				m.ProtocolContractRef, m.ContentType = c.ContractID, encrypt.PrivateContentType([]string{"secret"})
			})
		if status != http.StatusBadRequest || code != wire.CodeSecDecrypt {
			t.Fatalf("answer %d %s, want 400 TP-SEC003", status, code)
		}
		if _, err := b.a.Task(id); err == nil {
			t.Error("the executor created the task")
		}
	})
}

// TestContractRefs: protocol_contract_ref checked on every later message.
func TestContractRefs(t *testing.T) {
	clock := newFakeClock()
	opts := agent.Options{Clock: clock}
	shortTTL := func(c *agent.Config) { c.Negotiation.ContractTTLSeconds = 60 }
	a := startPeerWith(t, "requester", opts)
	b := startPeerWith(t, "responder", opts, shortTTL)
	third := startPeerWith(t, "third", opts)
	pair(t, a, b)
	pair(t, third, b)
	ack := &wire.AckPayload{MessageID: uuid.Must(uuid.NewV7()).String()}
	send := func(from *peerNode, ref string) (int, wire.ErrorCode) {
		return sendAs(t, from, b, wire.MsgAck, ack, clock.Now(), func(m *wire.UnifiedSynapseMessage) { m.ProtocolContractRef = ref })
	}
	expect := func(t *testing.T, from *peerNode, ref string, wantStatus int, wantCode wire.ErrorCode) {
		t.Helper()
		if status, code := send(from, ref); status != wantStatus || code != wantCode {
			t.Errorf("ref %q: answer %d %q, want %d %q", ref, status, code, wantStatus, wantCode)
		}
	}

	t.Run("never negotiated: no contract is TP-NEG010", func(t *testing.T) {
		expect(t, a, "", http.StatusPreconditionRequired, wire.CodeNegContractMissing)
	})
	c1 := negotiated(t, a, b, negotiate.Request{}).Contract
	t.Run("active contract", func(t *testing.T) {
		expect(t, a, c1.ContractID, http.StatusAccepted, "")
		expect(t, a, "", http.StatusAccepted, "") // applied implicitly
	})
	t.Run("unknown contract is TP-NEG011", func(t *testing.T) {
		expect(t, a, uuid.Must(uuid.NewV7()).String(), http.StatusNotFound, wire.CodeNegContractUnknown)
	})
	t.Run("another peer's contract is TP-NEG011", func(t *testing.T) {
		other := negotiated(t, third, b, negotiate.Request{}).Contract
		expect(t, a, other.ContractID, http.StatusNotFound, wire.CodeNegContractUnknown)
	})
	clock.Advance(61 * time.Second)
	t.Run("expired contract is TP-NEG012", func(t *testing.T) {
		expect(t, a, c1.ContractID, http.StatusGone, wire.CodeNegContractExpired)
		if ci, _ := a.a.Contracts().Get(c1.ContractID); ci == nil || ci.Status != negotiate.StatusExpired {
			t.Errorf("requester's copy is %+v, want expired", ci)
		}
	})
	t.Run("no ref and no active contract is TP-NEG010; the outbox renegotiates", func(t *testing.T) {
		expect(t, a, "", http.StatusPreconditionRequired, wire.CodeNegContractMissing)
		task := submitTo(t, a, b, "echo", `{}`)
		testutil.Eventually(t, 10*time.Second, "the task request to be delivered under a new contract", func() bool {
			got, err := a.a.Task(task.ID)
			return err == nil && got.Status == wire.StatusCompleted
		})
		ci, _, err := a.a.Contracts().List(contracts.Query{Peer: b.id(), Limit: 10})
		if err != nil || len(ci) < 2 || ci[0].Status != negotiate.StatusActive || ci[0].Contract.ContractID == c1.ContractID {
			t.Errorf("contracts with the responder: %+v, %v; want a new active one first", ci, err)
		}
	})
	t.Run("revoked contract is TP-NEG012 on both sides", func(t *testing.T) {
		c2 := negotiated(t, a, b, negotiate.Request{}).Contract
		expect(t, a, c2.ContractID, http.StatusAccepted, "")
		ci, err := a.a.Contracts().Revoke(context.Background(), c2.ContractID)
		if err != nil || ci.Status != negotiate.StatusRevoked || ci.RevokedBy != "local" {
			t.Fatalf("RevokeContract = %+v, %v", ci, err)
		}
		// Read back (the records read before are cached, and dropped by
		// the revocation).
		if mine, err := a.a.Contracts().Get(c2.ContractID); err != nil || mine.Status != negotiate.StatusRevoked {
			t.Errorf("Get after Revoke = %+v, %v; want revoked", mine, err)
		}
		testutil.Eventually(t, 10*time.Second, "the responder to learn of the revocation", func() bool {
			theirs, err := b.a.Contracts().Get(c2.ContractID)
			return err == nil && theirs.Status == negotiate.StatusRevoked && theirs.RevokedBy == a.id()
		})
		expect(t, a, c2.ContractID, http.StatusGone, wire.CodeNegContractExpired)
		again, err := a.a.Contracts().Revoke(context.Background(), c2.ContractID)
		if err != nil || again.RevokedAt != ci.RevokedAt {
			t.Errorf("revoking again = %+v, %v; want the first revocation", again, err)
		}
	})
	t.Run("by default peers that never negotiated are refused; liveness is exempt", func(t *testing.T) {
		strict := startPeerWith(t, "strict", opts)
		pair(t, a, strict)
		status, code := sendAs(t, a, strict, wire.MsgAck, ack, clock.Now(), nil)
		if status != http.StatusPreconditionRequired || code != wire.CodeNegContractMissing {
			t.Errorf("answer %d %s, want 428 TP-NEG010", status, code)
		}
		status, code = sendAs(t, a, strict, wire.MsgHeartbeat, &wire.HeartbeatPayload{Status: peer.PeerOnline}, clock.Now(), nil)
		if status != http.StatusAccepted {
			t.Errorf("heartbeat answered %d %s, want 202: liveness needs no contract", status, code)
		}
	})
	t.Run("require_contract false admits a same-system peer without one", func(t *testing.T) {
		lax := startPeerWith(t, "lax", opts, func(c *agent.Config) { no := false; c.Negotiation.RequireContract = &no })
		pair(t, a, lax)
		if status, code := sendAs(t, a, lax, wire.MsgAck, ack, clock.Now(), nil); status != http.StatusAccepted {
			t.Errorf("answer %d %s, want 202", status, code)
		}
	})
	t.Run("a peer of another system needs a contract even when not required", func(t *testing.T) {
		no := false
		other := startPeerWith(t, "other", opts, func(c *agent.Config) { c.SystemID = "elsewhere"; c.Negotiation.RequireContract = &no })
		pair(t, a, other)
		if status, code := sendAs(t, a, other, wire.MsgAck, ack, clock.Now(), nil); status != http.StatusPreconditionRequired || code != wire.CodeNegContractMissing {
			t.Errorf("answer %d %s, want 428 TP-NEG010", status, code)
		}
		ci := negotiated(t, a, other, negotiate.Request{})
		if ci.Contract.SecurityLevel != negotiate.High {
			t.Errorf("cross-system contract is %s, want high", ci.Contract.SecurityLevel)
		}
	})
}
