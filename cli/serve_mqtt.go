package cli

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/synapse-edge/synapse/agent"
	"github.com/synapse-edge/synapse/cli/config"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
	"github.com/synapse-edge/synapse/transport/mqtt"
	"github.com/synapse-edge/synapse/wire"
)

// addMQTT builds the MQTT transport of the mqtt section and adds it to the
// agent's transport for mqtt and mqtts destinations (an uplink to
// "mqtt://" then publishes there). Without the section it returns nil.
// The transport connects once started (startMQTT), after the agent opened
// and knows its identity.
func addMQTT(a *agent.Agent, m *config.MQTT, log *slog.Logger) (*mqtt.Transport, error) {
	if m == nil {
		return nil, nil
	}
	t, err := mqtt.NewTransport(m.Options(log.With("component", "mqtt")))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if err := a.AddWire(t, mqtt.Schemes...); err != nil {
		return nil, err
	}
	return t, nil
}

// startMQTT connects t (nil: nothing) as the opened agent; envelopes
// published to its inbox go to the peer network, and peers may fetch its
// identity, capabilities and interfaces (pairing, the peer's task
// types) through the broker; the southbound routes of m store device
// messages as tier-1 frames.
func startMQTT(ctx context.Context, a *agent.Agent, nw *peer.Network, t *mqtt.Transport, t1 *tier1.Service, m *config.MQTT, log *slog.Logger) error {
	if t == nil {
		return nil
	}
	routes, err := southbound.CompileAll(m.Southbound, t1.Registry())
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if len(routes) > 0 {
		s, err := southbound.NewBridge(t.Context(), t, t1.Ingestor(), routes, log.With("component", "mqtt"))
		if err != nil {
			return err
		}
		r := a.Metrics()
		r.CounterFunc("synapse_mqtt_southbound_stored_total", "Device messages from the MQTT broker stored as tier-1 frames.", func() float64 { return float64(s.Stored.Load()) })
		r.CounterFunc("synapse_mqtt_southbound_duplicates_total", "Device messages from the MQTT broker acknowledged as already stored (redeliveries).", func() float64 { return float64(s.Duplicates.Load()) })
		r.CounterFunc("synapse_mqtt_southbound_refused_total", "Device messages from the MQTT broker refused (not JSON or msgpack, a field missing or of the wrong type, oversized).", func() float64 { return float64(s.Bad.Load()) })
		r.CounterFunc("synapse_mqtt_southbound_failed_total", "Device messages from the MQTT broker not stored for an error of the agent or a full reject_new quota (left unacknowledged, for redelivery).", func() float64 { return float64(s.Failed.Load()) })
	}
	t.SetReceiver(nw.Inbound().Receiver())
	card := mqtt.Card{PublicKey: a.Identity().PublicKey, Endpoint: a.Identity().Endpoint}
	for _, tt := range a.TaskTypes() {
		card.TaskTypes = append(card.TaskTypes, tt.Type)
		if len(tt.Capabilities) > 0 {
			if card.Capabilities == nil {
				card.Capabilities = map[string][]string{}
			}
			card.Capabilities[tt.Type] = tt.Capabilities
		}
	}
	t.SetPresence(card, a.Sign)
	dir := mqtt.NewDirectory()
	t.SetDirectory(dir)
	nw.Directory().AddSource("mqtt", func() []peer.DirectoryEntry { return directoryOf(dir.List()) })
	t.SetDocuments(func(ctx context.Context, path string) ([]byte, string, bool) {
		var v any
		switch path {
		case peer.IdentityPath:
			id := a.Identity()
			v = &id
		case wire.APIPrefix + "/capabilities":
			c, err := a.GetCapabilities(ctx)
			if err != nil {
				return nil, "", false
			}
			v = c
		case agent.InterfacesPath:
			v = a.Interfaces()
		default:
			return nil, "", false
		}
		b, err := wire.JSON.Marshal(v)
		return b, wire.ContentJSON, err == nil
	})
	id := a.Identity()
	if err := t.Start(ctx, id.SystemID, id.AgentID); err != nil {
		return err
	}
	c := t.Client()
	r := a.Metrics()
	r.CounterFunc("synapse_mqtt_connects_total", "Connections made to the MQTT broker.", func() float64 { return float64(c.Connects.Load()) })
	r.CounterFunc("synapse_mqtt_connection_losses_total", "Connections to the MQTT broker lost.", func() float64 { return float64(c.Drops.Load()) })
	r.GaugeFunc("synapse_mqtt_directory_agents", "Agents whose cards this agent holds from the MQTT broker (its own among them).", func() float64 { n, _ := dir.Counts(); return float64(n) })
	r.GaugeFunc("synapse_mqtt_directory_online", "Agents of the MQTT directory whose cards say online.", func() float64 { _, n := dir.Counts(); return float64(n) })
	r.CounterFunc("synapse_mqtt_cards_dropped_total", "Presence cards from the MQTT broker dropped (malformed, unsigned, forged, another key).", func() float64 { return float64(dir.Dropped.Load()) })
	if m.TaskEvents {
		var dropped atomic.Uint64
		publishTaskEvents(a, t, t.Client().Options().Logger, &dropped)
		r.CounterFunc("synapse_mqtt_task_events_dropped_total", "Task events not published to the MQTT broker (queue full, or the agent stopped first).", func() float64 { return float64(dropped.Load()) })
	}
	r.CounterFunc("synapse_mqtt_malformed_messages_total", "Messages on this agent's MQTT inbox dropped as malformed.", func() float64 { return float64(t.Malformed.Load()) })
	return nil
}

// directoryOf is the directory view of the agents whose cards are on the
// broker: what a card says (status, key, endpoint, task types and their
// capabilities); registered_at is when the card was signed, last_seen when
// this agent took it. A card lists no interfaces, so the compliance shown
// is not evaluated (compliant false, nothing missing listed).
func directoryOf(list []mqtt.Listed) []peer.DirectoryEntry {
	out := make([]peer.DirectoryEntry, 0, len(list))
	for _, l := range list {
		caps := &wire.AgentCapabilities{AgentID: l.AgentID, SystemID: l.SystemID}
		for _, tt := range l.Card.TaskTypes {
			caps.SupportedTaskTypes = append(caps.SupportedTaskTypes, wire.SupportedTaskType{Type: tt, Capabilities: l.Card.Capabilities[tt]})
		}
		status := peer.PeerOnline
		if l.Card.Status == mqtt.CardOffline {
			status = peer.PeerOffline
		}
		out = append(out, peer.DirectoryEntry{AgentID: l.AgentID, SystemID: l.SystemID, Endpoint: l.Card.Endpoint,
			PublicKey: l.Card.PublicKey, Status: status, RegisteredAt: wire.FormatTime(l.SignedAt),
			LastSeen: wire.FormatTime(l.Seen), AgentCapabilities: caps, Compliance: wire.ComplianceEvaluation{AgentID: l.AgentID}})
	}
	return out
}
