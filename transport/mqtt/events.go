package mqtt

import (
	"context"
	"errors"
	"fmt"
)

// Events is {prefix}/{system_id}/{agent_id}/events: where the agent
// publishes its tasks' status changes as JSON, when configured.
func (t Topics) Events(systemID, agentID string) (string, error) {
	for _, l := range []struct{ name, v string }{{"system_id", systemID}, {"agent_id", agentID}} {
		if !validLevel(l.v) {
			return "", fmt.Errorf("mqtt: %s %q cannot be a topic level", l.name, l.v)
		}
	}
	return t.Prefix + "/" + systemID + "/" + agentID + "/events", nil
}

// PublishEvent publishes payload (not retained, QoS 1) on this agent's
// events topic; like Client.Publish it waits for the broker (up to ctx)
// while the link is down. Call it after Start.
func (t *Transport) PublishEvent(ctx context.Context, payload []byte) error {
	t.mu.Lock()
	c, system, agent := t.c, t.system, t.agent
	t.mu.Unlock()
	if c == nil {
		return errors.New("mqtt: transport not started")
	}
	topic, err := t.topics().Events(system, agent)
	if err != nil {
		return err
	}
	return c.Publish(ctx, topic, payload, false)
}
