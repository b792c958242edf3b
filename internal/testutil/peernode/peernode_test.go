package peernode_test

import (
	"net/http"
	"testing"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/hil"
	"github.com/synapse-edge/synapse/internal/testutil/peernode"
	"github.com/synapse-edge/synapse/wire"
)

// noKeepAlive leaves no idle connection that would hold a server open.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// health answers the status of GET /health at url, or 0 when nothing
// answers.
func health(url string) int {
	resp, err := noKeepAlive.Get(url + wire.APIPrefix + "/health")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

func TestNode(t *testing.T) {
	a := peernode.Start(t, peernode.Options{Name: "a"})
	b := peernode.Start(t, peernode.Options{Name: "b", Groups: true, AdminToken: "other",
		Config: []func(*agent.Config){func(c *agent.Config) { c.SystemID = "plant-b" }}})
	c := peernode.Start(t, peernode.Options{Name: "c", HIL: &hil.Options{}})
	if a.Groups != nil || b.Groups == nil || c.Groups != nil {
		t.Fatalf("Groups = %v, %v, %v; want a manager on b only", a.Groups, b.Groups, c.Groups)
	}
	if a.HIL != nil || b.HIL != nil || c.HIL == nil {
		t.Fatalf("HIL = %v, %v, %v; want a manager on c only", a.HIL, b.HIL, c.HIL)
	}
	if got := b.Agent.Identity(); got.Endpoint != b.URL() || got.SystemID != "plant-b" || b.Config.AdminToken != "other" {
		t.Fatalf("b's identity %+v (token %q), want endpoint %s, system plant-b, token other", got, b.Config.AdminToken, b.URL())
	}
	if a.Config.AdminToken != peernode.AdminToken || a.Name() != "a" {
		t.Fatalf("a's token %q name %q", a.Config.AdminToken, a.Name())
	}
	if got := health(a.URL()); got != http.StatusOK {
		t.Fatalf("a's health = %d", got)
	}
	peernode.Pair(t, a, b)
	for _, x := range [][2]*peernode.Node{{a, b}, {b, a}} {
		if _, err := x[0].Network.Pairing().Peer(x[1].ID()); err != nil {
			t.Fatalf("%s does not know %s after Pair: %v", x[0].Name(), x[1].Name(), err)
		}
	}

	id, url := b.ID(), b.URL()
	b.Stop()
	b.Stop() // safe twice
	if b.Up() || health(url) != 0 {
		t.Fatalf("b up %v, answering %d after Stop", b.Up(), health(url))
	}
	b.Open()
	if b.ID() != id || b.URL() != url || health(url) != http.StatusOK {
		t.Fatalf("b reopened as %s at %s (health %d), want %s at %s", b.ID(), b.URL(), health(b.URL()), id, url)
	}
	if _, err := b.Network.Pairing().Peer(a.ID()); err != nil {
		t.Fatalf("b forgot a across the restart: %v", err)
	}
	old := b.Agent
	b.Restart()
	if b.Agent == old || b.ID() != id || b.URL() != url || !b.Up() {
		t.Fatalf("Restart: new agent %v, id %s, url %s, up %v", b.Agent != old, b.ID(), b.URL(), b.Up())
	}
}
