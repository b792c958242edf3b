package peer

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// HMAC transport signatures between peers (seed 004 §8.2, SPEC §3).
//
// A peer listed in p2p.peer_secrets shares one or more secrets with this
// agent. Every envelope this agent posts to it (messages, negotiations,
// heartbeats) carries X-Synapse-Signature with one v1 entry per secret,
// and every envelope from it, through any door (receiver.go), must carry
// a header that verifies with one of them: the right HMAC-SHA256 of
// "<t>.<raw body>" (compared in constant time), t within 300 s of local
// time, and not a replay — the same t and body from that peer seen within
// the window again is refused even though the message id would only be
// answered as a duplicate. Every failure is 401: TP-ID005 for a stale t,
// TP-ID003 otherwise, with details.reason missing, malformed, mismatch or
// replayed. Peers without a secret are authenticated by their Ed25519
// signature alone (the header is ignored). Listing several secrets
// rotates keys: sign with both until the peer has the new one.
//
// The replay memory lives in memory: after a restart a replay within the
// window passes this check, and the message id check still keeps it from
// taking effect twice.

// maxReplayMemory bounds the remembered signatures.
const maxReplayMemory = 100_000

// hmacGuard verifies inbound HMAC headers and remembers what it accepted.
type hmacGuard struct {
	mu   sync.Mutex
	seen map[string]time.Time // sender \x00 t \x00 sha256(body) → t
	// pruned is when entries older than the window were last dropped.
	pruned time.Time
}

// peerSecrets are the secrets shared with peer, or nil.
func (c *Config) peerSecrets(peer string) [][]byte {
	for _, ps := range c.PeerSecrets {
		if ps.AgentID == peer {
			return ps.Secrets
		}
	}
	return nil
}

// signHeader is the header for an envelope body sent to peer at now:
// its signature when they share a secret, else empty.
func (c *Config) signHeader(peer string, now time.Time, body []byte) map[string]string {
	h := map[string]string{}
	if secrets := c.peerSecrets(peer); len(secrets) > 0 {
		h[transport.HeaderSignature] = wire.SignHMACKeys(secrets, now, body)
	}
	return h
}

// CheckTransportSignature verifies the X-Synapse-Signature header of an
// envelope body from sender (see above); nil when sender shares no
// secret with this agent.
func (ib *Inbound) CheckTransportSignature(sender, header string, body []byte) error {
	secrets := ib.p2p.peerSecrets(sender)
	if len(secrets) == 0 || !ib.n.ready() {
		return nil
	}
	now := ib.clock.Now()
	refuse := func(code wire.ErrorCode, reason string, err error) error {
		ib.a.Audit(agent.AuditSignatureFailed, sender, map[string]any{"transport": "hmac", "reason": reason, "error": err.Error()})
		return wire.Errorf(code, "%s: %v", wire.HeaderSignature, err).With("reason", reason).With("sender", sender)
	}
	if err := wire.VerifyHMAC(header, secrets, body, now, wire.HMACTolerance); err != nil {
		switch {
		case errors.Is(err, wire.ErrHMACStale):
			return refuse(wire.CodeIDStaleTimestamp, "stale", err)
		case errors.Is(err, wire.ErrHMACMissing):
			return refuse(wire.CodeIDUnknownSender, "missing", err)
		case errors.Is(err, wire.ErrHMACMalformed):
			return refuse(wire.CodeIDUnknownSender, "malformed", err)
		}
		return refuse(wire.CodeIDUnknownSender, "mismatch", err)
	}
	t, _ := strconv.ParseInt(strings.TrimPrefix(firstEntry(header), "t="), 10, 64)
	if !ib.hmac.remember(sender, t, body, now) {
		return refuse(wire.CodeIDUnknownSender, "replayed", fmt.Errorf("the same signed request was received before"))
	}
	return nil
}

// firstEntry is the t=... entry of a header that verified.
func firstEntry(header string) string {
	for e := range strings.SplitSeq(header, ",") {
		if e = strings.TrimSpace(e); strings.HasPrefix(e, "t=") {
			return e
		}
	}
	return ""
}

// remember records a verified (sender, t, body); false when it was seen
// within the window.
func (g *hmacGuard) remember(sender string, t int64, body []byte, now time.Time) bool {
	sum := sha256.Sum256(body)
	key := sender + "\x00" + strconv.FormatInt(t, 10) + "\x00" + string(sum[:])
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]time.Time{}
	}
	if _, dup := g.seen[key]; dup {
		return false
	}
	// Entries outside the window can go: their t is refused as stale.
	// Pruned at most once per window, or when the memory is full.
	if len(g.seen) >= maxReplayMemory || (len(g.seen) > 0 && now.Sub(g.pruned) > wire.HMACTolerance) {
		cutoff := now.Add(-2 * wire.HMACTolerance)
		for k, at := range g.seen {
			if at.Before(cutoff) {
				delete(g.seen, k)
			}
		}
		g.pruned = now
		if len(g.seen) >= maxReplayMemory {
			return false // flooded with fresh signatures: refuse rather than forget
		}
	}
	g.seen[key] = time.Unix(t, 0)
	return true
}
