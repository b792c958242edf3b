// Package outbound decides which addresses the agent may connect to for
// URLs a client gave it (callback_url, A2A push notification URLs): private,
// loopback, link-local and reserved ranges are refused unless the
// operator allowed them. The HTTP transport dials Callback messages
// through Policy.DialContext; the agent checks such URLs when they are
// given with Policy.CheckURL.
package outbound

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// Config is the policy for URLs a client names and the agent then
// calls: callback_url of tasks and A2A push notification URLs. Peers are
// not subject to it (pairing one needs the admin scope).
type Config struct {
	// Allow lists CIDR ranges (or single addresses) that are refused by
	// default but permitted here, e.g. ["10.0.0.0/8"] for webhooks on the
	// plant network or ["127.0.0.0/8"] for a receiver on the same host.
	Allow []string `json:"allow,omitempty"`
}

// Policy decides whether the agent may call a URL a client gave it.
//
// Refused by default, with 400 outbound_target_refused: loopback
// (127.0.0.0/8, ::1), unspecified (0.0.0.0, ::), link-local
// (169.254.0.0/16 — cloud metadata — and fe80::/10), private
// (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7), shared
// (100.64.0.0/10), multicast and broadcast addresses, unless a range of
// Config.Allow contains the address. The agent's own API
// (its listen port on a loopback, unspecified or listen address) is refused
// even when allowed.
//
// CheckURL is the check at the door (submission, push config); a host name
// is resolved and every address it resolves to must pass. DialContext is
// the check at send time: it resolves again and dials only addresses that
// pass, so a name that changes its answer after the first check (DNS
// rebinding) still cannot reach a refused address.
//
// Every outbound URL a client controls goes through one Policy:
// agent.Agent.OutboundPolicy returns the agent's.
type Policy struct {
	allow    []netip.Prefix
	ownPort  int
	ownAddr  netip.Addr
	resolver *net.Resolver
	dialer   net.Dialer
}

// ErrTargetRefused is wrapped by the errors of a refused target.
var ErrTargetRefused = errors.New("outbound target refused")

// resolveTimeout bounds the name lookup of CheckURL.
const resolveTimeout = 3 * time.Second

// New builds the policy of cfg for an agent listening on
// listen (HOST:PORT, may be empty).
func New(cfg Config, listen string) (*Policy, error) {
	p := &Policy{resolver: net.DefaultResolver, dialer: net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}}
	for _, s := range cfg.Allow {
		pr, err := ParseRange(s)
		if err != nil {
			return nil, err
		}
		p.allow = append(p.allow, pr)
	}
	if host, port, err := net.SplitHostPort(listen); err == nil {
		p.ownPort, _ = strconv.Atoi(port)
		p.ownAddr, _ = netip.ParseAddr(host)
	}
	return p, nil
}

// ParseRange reads an allowed range: a CIDR range or a single address.
func ParseRange(s string) (netip.Prefix, error) {
	if pr, err := netip.ParsePrefix(s); err == nil {
		return pr.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is neither a CIDR range nor an address", s)
	}
	return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
}

// refusedRanges are the ranges refused unless allowed.
var refusedRanges = func() []netip.Prefix {
	var ps []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
		"172.16.0.0/12", "192.0.0.0/24", "192.168.0.0/16", "198.18.0.0/15", "224.0.0.0/4", "240.0.0.0/4",
		"::/128", "::1/128", "fc00::/7", "fe80::/10", "ff00::/8", "64:ff9b::/96",
	} {
		ps = append(ps, netip.MustParsePrefix(s))
	}
	return ps
}()

// CheckAddr says whether the agent may connect to addr:port.
func (p *Policy) CheckAddr(addr netip.Addr, port int) error {
	addr = addr.Unmap()
	if p.ownPort != 0 && port == p.ownPort &&
		(addr.IsLoopback() || addr.IsUnspecified() || addr == p.ownAddr.Unmap() || isLocalAddr(addr)) {
		return fmt.Errorf("%w: %s is the agent's own API", ErrTargetRefused, netip.AddrPortFrom(addr, uint16(port)))
	}
	for _, a := range p.allow {
		if a.Contains(addr) {
			return nil
		}
	}
	for _, r := range refusedRanges {
		if r.Contains(addr) {
			return fmt.Errorf("%w: %s is in %s (loopback, link-local, private or reserved); allow it with outbound.allow", ErrTargetRefused, addr, r)
		}
	}
	return nil
}

// localAddrs are the addresses of this host's interfaces, read once.
var localAddrs = sync.OnceValue(func() map[netip.Addr]bool {
	m := map[netip.Addr]bool{}
	as, _ := net.InterfaceAddrs()
	for _, a := range as {
		if pr, err := netip.ParsePrefix(a.String()); err == nil {
			m[pr.Addr().Unmap()] = true
		}
	}
	return m
})

func isLocalAddr(a netip.Addr) bool { return localAddrs()[a] }

// CheckURL checks an http or https URL a client gave: its syntax, and the
// addresses its host is or resolves to. A name that does not resolve now is
// accepted (the device may be offline); DialContext checks it again when
// it is used. The error is a 400 TPError naming field.
func (p *Policy) CheckURL(ctx context.Context, field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(raw) > 2048 {
		return wire.Errorf(wire.CodeInvalidParams, "%s must be an absolute http or https URL of at most 2048 bytes", field).With("field", field)
	}
	port := 80
	if u.Scheme == "https" {
		port = 443
	}
	if s := u.Port(); s != "" {
		if port, err = strconv.Atoi(s); err != nil || port < 1 || port > 65535 {
			return wire.Errorf(wire.CodeInvalidParams, "%s has a bad port", field).With("field", field)
		}
	}
	addrs, err := p.lookup(ctx, u.Hostname())
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a, port); err != nil {
			return wire.Errorf(wire.CodeTargetRefused, "%s: %v", field, err).With("field", field)
		}
	}
	return nil
}

func (p *Policy) lookup(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := p.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("%s has no address", host)
	}
	return ips, nil
}

// DialContext dials address (HOST:PORT) through the policy: it resolves
// the host and connects only to addresses that pass. Use it as the
// DialContext of the transport that calls client-given URLs.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return nil, err
	}
	port, err := strconv.Atoi(ps)
	if err != nil {
		return nil, fmt.Errorf("bad port in %q", address)
	}
	addrs, err := p.lookup(ctx, host)
	if err != nil {
		return nil, err
	}
	var firstErr error
	for _, a := range addrs {
		if err := p.CheckAddr(a, port); err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		c, err := p.dialer.DialContext(ctx, network, netip.AddrPortFrom(a, uint16(port)).String())
		if err == nil {
			return c, nil
		}
		firstErr = err
	}
	return nil, firstErr
}
