package cli

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/transport/mqtt"
)

// startMQTT connects the agent to the broker of the mqtt section and, when
// the uplink's endpoint is "mqtt://", publishes its stored tier-1 batches
// there. Without the section it does nothing. stop ends both (before the
// agent closes its store).
func startMQTT(ctx context.Context, a *agent.Agent, cfg agent.Config, log *slog.Logger) (stop func(context.Context) error, err error) {
	m := cfg.MQTT
	if m == nil {
		return func(context.Context) error { return nil }, nil
	}
	id := a.Identity()
	o := mqtt.Options{URL: m.URL, ClientID: m.ClientID, Username: m.Username, Password: m.Password,
		CAFile: m.CAFile, CertFile: m.CertFile, KeyFile: m.KeyFile, TopicPrefix: m.TopicPrefix,
		KeepAlive: time.Duration(m.KeepAliveSeconds) * time.Second, MaxReconnectInterval: time.Duration(m.MaxReconnectMS) * time.Millisecond,
		Logger: log.With("component", "mqtt")}
	if o.ClientID == "" {
		o.ClientID = id.AgentID
	}
	c, err := mqtt.New(o)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	r := a.Metrics()
	r.CounterFunc("synapse_mqtt_connects_total", "Connections made to the MQTT broker.", func() float64 { return float64(c.Connects.Load()) })
	r.CounterFunc("synapse_mqtt_connection_losses_total", "Connections to the MQTT broker lost.", func() float64 { return float64(c.Drops.Load()) })
	bg, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	if cfg.UplinkViaMQTT() {
		nb := mqtt.NewNorthbound(c, a.Store(), a.Tier1().Queued(), id.SystemID, id.AgentID)
		r.CounterFunc("synapse_tier1_uplink_sent_batches_total", "Batches the upstream acknowledged.", func() float64 { return float64(nb.Sent.Load()) })
		r.CounterFunc("synapse_tier1_uplink_failures_total", "Failed attempts to reach the upstream.", func() float64 { return float64(nb.Failures.Load()) })
		r.CounterFunc("synapse_tier1_uplink_dropped_batches_total", "Batches the upstream refused for good.", func() float64 { return float64(nb.Dropped.Load()) })
		r.GaugeFunc("synapse_tier1_uplink_pending_batches", "Batches waiting to go upstream.", func() float64 { return float64(nb.Pending()) })
		go func() { defer close(done); nb.Run(bg) }()
	} else {
		close(done)
	}
	return func(ctx context.Context) error {
		cancel()
		<-done
		return c.Close(ctx)
	}, nil
}
