// Package main is the command embed, a complete program that embeds a Synapse agent: it
// registers its own task type ("add", handled by Go code), serves the
// REST API like synapse serve does, and stops cleanly on SIGINT or
// SIGTERM.
//
//	go run ./examples/embed --data ./embed-data --listen 127.0.0.1:8090
//	curl -s -H "Authorization: Bearer $(cat embed-data/admin.token)" \
//	     -d '{"task_type":"add","payload":{"a":2,"b":3}}' \
//	     "http://127.0.0.1:8090/api/v1/synapse/task?wait=5"
//
// make test builds it and runs its test, so it keeps compiling against the
// library.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/httpapi"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/transport/netwire"
	"github.com/synapse-edge/synapse/transport/outbound"
	"github.com/synapse-edge/synapse/wire"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], nil); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// addHandler adds two integers: {"a":2,"b":3} → {"sum":5}.
var addHandler = agent.Handler{
	Type:        wire.SupportedTaskType{Type: "add", Name: "Add two integers"},
	InputSchema: []byte(`{"type":"object","required":["a","b"],"properties":{"a":{"type":"integer"},"b":{"type":"integer"}}}`),
	Idempotent:  true,
	Func: func(ctx context.Context, r *agent.Run) (any, error) {
		var in struct{ A, B int }
		if err := r.Decode(&in); err != nil {
			return nil, err
		}
		return map[string]int{"sum": in.A + in.B}, nil
	},
}

// run serves until ctx is done; ready, if not nil, gets the listen
// address once the API serves.
func run(ctx context.Context, args []string, ready chan<- string) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	data := fs.String("data", "./embed-data", "data directory")
	listen := fs.String("listen", "127.0.0.1:8090", "address of the REST API")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	cfg := agent.Defaults()
	cfg.DataDir = *data
	cfg.Listen = ln.Addr().String()
	cfg.Endpoint = "http://" + cfg.Listen
	// The network wires (HTTP and WebSocket) are the program's to build,
	// as synapse serve builds them: peers, webhooks and callbacks go out
	// through them, callback URLs a client gave dialed through the
	// outbound policy. An agent given none runs its local tasks and sends
	// nothing.
	pol, err := outbound.New(cfg.Outbound, cfg.Listen)
	if err != nil {
		ln.Close()
		return err
	}
	wires := netwire.New(netwire.Options{Guard: pol.DialContext})
	defer wires.Close() // after the agent
	// Tier 1 (routines, ingest, stored frames) is the program's too, as
	// synapse serve builds it from the tier1 section: the agent opens and
	// prunes it, the API serves it.
	t1, err := tier1.NewService(tier1.DefaultConfig(), tier1.ServiceOptions{SeenFor: agent.IdempotencyTTL})
	if err != nil {
		ln.Close()
		return err
	}
	a, err := agent.New(cfg, agent.Options{Logger: log, Transport: wires, Outbound: pol, Tier1: t1})
	if err != nil {
		ln.Close()
		return err
	}
	if err := a.Handle(addHandler); err != nil {
		ln.Close()
		return err
	}
	// The peer network (pairing, the outbox, messages from peers) rides
	// on the agent: built before Open, opened and closed with it.
	nw, err := peer.New(a, peer.Options{Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	if err := a.Open(ctx); err != nil {
		ln.Close()
		return err
	}
	srv := httpapi.New(a, httpapi.Options{Logger: log, Network: nw, Tier1: t1})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if ready != nil {
		ready <- cfg.Listen
	}
	log.Info("serving", "listen", cfg.Listen, "token", *data+"/admin.token")

	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return errors.Join(err, srv.Shutdown(sctx), a.Close(sctx))
}
