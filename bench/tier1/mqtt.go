package main

import (
	"context"
	"fmt"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// mqttTopic is the topic every message goes to.
const mqttTopic = "telemetry/gateway-0042"

// mqttPublish connects to the broker at addr (host:port) and publishes
// msgs with QoS 1, keeping at most window of them unacknowledged. It
// returns the time from the first publish to the last PUBACK.
func mqttPublish(ctx context.Context, addr, clientID string, msgs [][]byte, window int) (time.Duration, error) {
	opts := mqtt.NewClientOptions().
		AddBroker("tcp://" + addr).
		SetClientID(clientID).
		SetCleanSession(true).
		SetAutoReconnect(false).
		SetConnectRetry(false).
		SetConnectTimeout(10 * time.Second).
		SetWriteTimeout(30 * time.Second)
	c := mqtt.NewClient(opts)
	if err := waitToken(ctx, c.Connect()); err != nil {
		return 0, fmt.Errorf("mqtt connect %s: %w", addr, err)
	}
	defer c.Disconnect(250)

	// ring holds the tokens in flight, oldest first.
	ring := make([]mqtt.Token, window)
	start := time.Now()
	for i, m := range msgs {
		if old := ring[i%window]; old != nil {
			if err := waitToken(ctx, old); err != nil {
				return 0, fmt.Errorf("mqtt publish %d: %w", i-window, err)
			}
		}
		ring[i%window] = c.Publish(mqttTopic, 1, false, m)
	}
	for i := max(0, len(msgs)-window); i < len(msgs); i++ {
		if err := waitToken(ctx, ring[i%window]); err != nil {
			return 0, fmt.Errorf("mqtt publish %d: %w", i, err)
		}
	}
	return time.Since(start), nil
}

// waitToken waits for t until ctx's deadline, and returns its error.
func waitToken(ctx context.Context, t mqtt.Token) error {
	select {
	case <-t.Done():
		return t.Error()
	case <-ctx.Done():
		return fmt.Errorf("no acknowledgement: %w", ctx.Err())
	}
}
