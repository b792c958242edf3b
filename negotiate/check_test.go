package negotiate_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/wire"
)

func goodContract(t *testing.T, req *negotiate.Request) *negotiate.Contract {
	t.Helper()
	c, rej := negotiate.Decide(negotiate.Input{Request: req, Requester: "a", RequesterSystem: "hospital", Now: now, ContractID: contractID}, responder())
	if rej != nil {
		t.Fatalf("Decide: %s", rej.Message)
	}
	return c
}

// TestCheckContract is the requester's side of seed 002 §8.4.3.
func TestCheckContract(t *testing.T) {
	base := negotiate.Request{CandidateTransports: native(), CandidateTiers: tiers(negotiate.Tier1, negotiate.Tier3), Capability: tel100,
		PreferredSecurityLevel: negotiate.Standard}
	for _, tc := range []struct {
		name     string
		edit     func(c *negotiate.Contract)
		required negotiate.SecurityLevel
		code     wire.ErrorCode
		msg      string
	}{
		{name: "valid", edit: func(c *negotiate.Contract) {}},
		{name: "not a UUID v7", edit: func(c *negotiate.Contract) { c.ContractID = "01902c4f-1a2b-4000-8000-aaaa00000001" },
			code: wire.CodeMessageFormatInvalid, msg: "UUID v7"},
		{name: "transport not offered", edit: func(c *negotiate.Contract) { c.TransportMethod.Protocol = negotiate.RESTAPI },
			code: wire.CodeMessageFormatInvalid, msg: "candidate transports"},
		{name: "transport endpoint changed", edit: func(c *negotiate.Contract) { c.TransportMethod.Endpoint = "http://127.0.0.1:1" },
			code: wire.CodeMessageFormatInvalid, msg: "candidate transports"},
		{name: "tier not offered", edit: func(c *negotiate.Contract) { c.CommunicationTier = negotiate.Tier2 },
			code: wire.CodeMessageFormatInvalid, msg: "candidate tiers"},
		{name: "security below requested", edit: func(c *negotiate.Contract) { c.SecurityLevel = negotiate.Basic },
			code: wire.CodeNegSecurity, msg: "below"},
		{name: "security below own policy", edit: func(c *negotiate.Contract) {}, required: negotiate.High,
			code: wire.CodeNegSecurity, msg: "below the high"},
		{name: "unknown security", edit: func(c *negotiate.Contract) { c.SecurityLevel = "ultra" },
			code: wire.CodeMessageFormatInvalid, msg: "security_level"},
		{name: "no trace", edit: func(c *negotiate.Contract) { c.NegotiationTrace = nil },
			code: wire.CodeMessageFormatInvalid, msg: "negotiation_trace"},
		{name: "expired", edit: func(c *negotiate.Contract) { c.ContractExpiration = wire.FormatTimestamp(now.Add(-time.Second)) },
			code: wire.CodeMessageFormatInvalid, msg: "has passed"},
		{name: "25 h", edit: func(c *negotiate.Contract) { c.ContractExpiration = wire.FormatTimestamp(now.Add(25 * time.Hour)) },
			code: wire.CodeMessageFormatInvalid, msg: "24 h"},
		{name: "24 h and the clock skew", edit: func(c *negotiate.Contract) {
			c.ContractExpiration = wire.FormatTimestamp(now.Add(24*time.Hour + negotiate.Skew))
		}},
		{name: "expiration not RFC 3339", edit: func(c *negotiate.Contract) { c.ContractExpiration = "2026-05-28 08:31:01Z" },
			code: wire.CodeMessageFormatInvalid, msg: "RFC 3339"},
		{name: "tier 1 with another routine", edit: func(c *negotiate.Contract) {
			c.Capability = &negotiate.CapabilityRef{CapabilityID: "synapse.telemetry", Version: "1.0.1", DescriptorHash: telemetry}
		}, code: wire.CodeMessageFormatInvalid, msg: "routine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := base
			c := goodContract(t, &req)
			tc.edit(c)
			required := req.Security().Max(tc.required)
			err := negotiate.CheckContract(&req, c, required, now)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("CheckContract: %v", err)
				}
				return
			}
			var we *wire.Error
			if !errors.As(err, &we) || we.Code != tc.code || !strings.Contains(we.Message, tc.msg) {
				t.Fatalf("CheckContract = %v, want %s mentioning %q", err, tc.code, tc.msg)
			}
		})
	}
}

func TestStatusAt(t *testing.T) {
	exp := now.Add(time.Hour)
	for _, tc := range []struct {
		at      time.Time
		revoked bool
		want    string
	}{
		{now, false, negotiate.StatusActive},
		{exp, false, negotiate.StatusExpired},
		{exp.Add(time.Second), false, negotiate.StatusExpired},
		{now, true, negotiate.StatusRevoked},
	} {
		if got := negotiate.StatusAt(exp, tc.revoked, tc.at); got != tc.want {
			t.Errorf("StatusAt(%v, revoked %v) = %s, want %s", tc.at, tc.revoked, got, tc.want)
		}
	}
}

// TestExchange is the 30 s / 3 retries rule with a short timeout.
func TestExchange(t *testing.T) {
	ctx := context.Background()
	quick := negotiate.Attempts{Timeout: 20 * time.Millisecond, Retries: 3}
	t.Run("timeouts then TP-NEG020", func(t *testing.T) {
		var calls atomic.Int32
		_, err := negotiate.Exchange(ctx, quick, func(ctx context.Context, n int) (int, error) {
			calls.Add(1)
			<-ctx.Done() // the peer never answers
			return 0, ctx.Err()
		})
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeNegTimeout || we.Status() != 504 {
			t.Fatalf("Exchange = %v, want TP-NEG020 (504)", err)
		}
		if got := calls.Load(); got != 4 {
			t.Errorf("attempts = %d, want 1 + 3 retries", got)
		}
		if we.Details["attempts"] != 4 {
			t.Errorf("details.attempts = %v, want 4", we.Details["attempts"])
		}
	})
	t.Run("retriable failures then success", func(t *testing.T) {
		got, err := negotiate.Exchange(ctx, quick, func(ctx context.Context, n int) (int, error) {
			if n < 3 {
				return 0, fmt.Errorf("connection refused: %w", negotiate.ErrRetriable)
			}
			return n, nil
		})
		if err != nil || got != 3 {
			t.Fatalf("Exchange = %d, %v; want success on attempt 3", got, err)
		}
	})
	t.Run("a refusal is not retried", func(t *testing.T) {
		var calls atomic.Int32
		refusal := wire.Errorf(wire.CodeNegNoLLM, "")
		_, err := negotiate.Exchange(ctx, quick, func(ctx context.Context, n int) (int, error) {
			calls.Add(1)
			return 0, refusal
		})
		if !errors.Is(err, refusal) || calls.Load() != 1 {
			t.Fatalf("Exchange = %v after %d calls, want the refusal after 1", err, calls.Load())
		}
	})
	t.Run("bounds", func(t *testing.T) {
		var calls atomic.Int32
		_, err := negotiate.Exchange(ctx, negotiate.Attempts{Timeout: time.Millisecond, Retries: 99}, func(ctx context.Context, n int) (int, error) {
			calls.Add(1)
			return 0, negotiate.ErrRetriable
		})
		if calls.Load() != 1+negotiate.MaxRetries || err == nil {
			t.Fatalf("%d attempts (%v), want at most 1 + %d", calls.Load(), err, negotiate.MaxRetries)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		_, err := negotiate.Exchange(cctx, quick, func(ctx context.Context, n int) (int, error) {
			cancel()
			return 0, negotiate.ErrRetriable
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Exchange = %v, want context.Canceled", err)
		}
	})
}
