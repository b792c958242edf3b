package outbound_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/synapse-edge/synapse/transport/outbound"
	"github.com/synapse-edge/synapse/wire"
)

func TestPolicy(t *testing.T) {
	def, err := outbound.New(outbound.Config{}, "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	allowed, err := outbound.New(outbound.Config{Allow: []string{"127.0.0.0/8", "10.1.2.3", "fd00::/8"}}, "127.0.0.1:8080")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		addr           string
		port           int
		defOK, allowOK bool
	}{
		{"93.184.216.34", 443, true, true},
		{"2606:4700::1111", 443, true, true},
		{"127.0.0.1", 9000, false, true},
		{"127.0.0.1", 8080, false, false}, // the agent's own API, even when allowed
		{"::1", 8080, false, false},
		{"0.0.0.0", 9000, false, false},
		{"169.254.169.254", 80, false, false},
		{"10.1.2.3", 80, false, true},
		{"10.1.2.4", 80, false, false},
		{"192.168.1.1", 80, false, false},
		{"172.16.0.1", 80, false, false},
		{"100.64.0.1", 80, false, false},
		{"fe80::1", 80, false, false},
		{"fd12::1", 80, false, true},
		{"::ffff:127.0.0.1", 9000, false, true},
		{"::ffff:169.254.169.254", 80, false, false},
		{"224.0.0.1", 80, false, false},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := def.CheckAddr(a, tc.port) == nil; got != tc.defOK {
			t.Errorf("default CheckAddr(%s, %d) ok = %v, want %v", tc.addr, tc.port, got, tc.defOK)
		}
		if got := allowed.CheckAddr(a, tc.port) == nil; got != tc.allowOK {
			t.Errorf("allowed CheckAddr(%s, %d) ok = %v, want %v", tc.addr, tc.port, got, tc.allowOK)
		}
	}

	ctx := context.Background()
	for _, u := range []string{"http://127.0.0.1:9/x", "http://localhost:9/x", "http://[::1]:9/", "http://169.254.169.254/latest/meta-data/", "https://10.0.0.1/"} {
		err := def.CheckURL(ctx, "callback_url", u)
		if e := wire.AsError(err); err == nil || e.Code != wire.CodeTargetRefused || e.Status() != 400 {
			t.Errorf("CheckURL(%s) = %v, want 400 %s", u, err, wire.CodeTargetRefused)
		}
	}
	for _, u := range []string{"ftp://x/", "http://", "not a url"} {
		if e := wire.AsError(def.CheckURL(ctx, "callback_url", u)); e.Code != wire.CodeInvalidParams {
			t.Errorf("CheckURL(%q) code = %s, want %s", u, e.Code, wire.CodeInvalidParams)
		}
	}
	if err := allowed.CheckURL(ctx, "callback_url", "http://127.0.0.1:9/x"); err != nil {
		t.Errorf("allowed CheckURL(loopback) = %v", err)
	}

	t.Run("dial refuses what resolves to a refused address", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
		_, port, _ := net.SplitHostPort(ln.Addr().String())
		if _, err := def.DialContext(ctx, "tcp", "localhost:"+port); !errors.Is(err, outbound.ErrTargetRefused) {
			t.Errorf("default dial localhost = %v, want ErrTargetRefused", err)
		}
		c, err := allowed.DialContext(ctx, "tcp", "localhost:"+port)
		if err != nil {
			t.Fatalf("allowed dial localhost = %v", err)
		}
		c.Close()
	})

	if _, err := outbound.New(outbound.Config{Allow: []string{"nonsense"}}, ""); err == nil {
		t.Error("NewOutboundPolicy accepted a bad range")
	}
}
