package main

import (
	"crypto/ed25519"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/wire"
)

// wireSizes are the bytes one telemetry frame costs in each encoding,
// message payload only (no TCP, WebSocket, MQTT or NATS framing).
type wireSizes struct {
	Frame           int     `json:"frame"`              // tier1.AppendFrame of one frame
	Tier1Batch      float64 `json:"tier1_batch"`        // a batch of B frames with batch_id, per frame
	Tier1Single     int     `json:"tier1_single"`       // a batch of one frame with batch_id
	JSONFrame       int     `json:"json_frame"`         // the frame as a JSON object with named fields
	EnvelopeJSON    int     `json:"envelope_json"`      // one signed JSON envelope per frame
	EnvelopeMsgpack int     `json:"envelope_msgpack"`   // the same envelope in msgpack
	EnvelopeBatch   float64 `json:"envelope_batch"`     // one signed JSON envelope of B frame objects, per frame
	BatchFrames     int     `json:"batch_frames"`       // B
	Signature       bool    `json:"envelope_signature"` // the envelopes carry an Ed25519 signature
}

// measureWireSizes encodes the same frames every way. It uses its own
// generator so that it does not consume the frames the runs use.
func measureWireSizes(baseTS int64, batch int) (wireSizes, error) {
	g := newGenerator(baseTS)
	ws := wireSizes{BatchFrames: batch, Signature: true}
	ws.Frame = len(g.frames(0, 1)[0])
	ws.Tier1Batch = float64(len(g.batches(0, batch, batch, "r1-synapse")[0])) / float64(batch)
	ws.Tier1Single = len(g.batches(0, 1, 1, "r1-synapse-1")[0])

	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return ws, fmt.Errorf("generate key: %w", err)
	}
	from := wire.AgentRef{AgentID: "edge_gateway-0042_3fa2c1", SystemID: "edge"}
	to := wire.AgentRef{AgentID: "core_collector_9b01e4", SystemID: "core"}
	now := time.Unix(0, baseTS)

	one := g.frame(0).AppendJSON(nil, &g.desc)
	ws.JSONFrame = len(one)
	env, err := signedEnvelope(one, from, to, now, priv)
	if err != nil {
		return ws, err
	}
	if ws.EnvelopeJSON, err = envelopeLen(env, wire.PayloadJSON, priv); err != nil {
		return ws, err
	}
	if ws.EnvelopeMsgpack, err = envelopeLen(env, wire.PayloadMsgpack, priv); err != nil {
		return ws, err
	}

	arr := []byte{'['}
	for i := range batch {
		if i > 0 {
			arr = append(arr, ',')
		}
		arr = g.frame(uint64(i)).AppendJSON(arr, &g.desc)
	}
	arr = append(arr, ']')
	benv, err := signedEnvelope(arr, from, to, now, priv)
	if err != nil {
		return ws, err
	}
	n, err := envelopeLen(benv, wire.PayloadJSON, priv)
	if err != nil {
		return ws, err
	}
	ws.EnvelopeBatch = float64(n) / float64(batch)
	return ws, nil
}

// signedEnvelope wraps a JSON payload in a p2p:task_request envelope.
func signedEnvelope(payload []byte, from, to wire.AgentRef, now time.Time, priv ed25519.PrivateKey) (*wire.UnifiedSynapseMessage, error) {
	p, err := wire.RawJSONPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("envelope payload: %w", err)
	}
	m := wire.NewMessage(wire.MsgTaskRequest, from, to, p, now)
	m.ContentType = wire.ContentJSON
	d := tier1.Telemetry()
	m.ProtocolContractRef = d.Hash()
	return m, nil
}

// envelopeLen signs m in codec c and returns its encoded length.
func envelopeLen(m *wire.UnifiedSynapseMessage, c wire.PayloadCodec, priv ed25519.PrivateKey) (int, error) {
	cp := *m
	p, err := m.Payload.Convert(c)
	if err != nil {
		return 0, fmt.Errorf("convert payload to %v: %w", c, err)
	}
	cp.Payload = p
	if c == wire.PayloadMsgpack {
		cp.ContentType = wire.ContentMsgpack
	}
	if err := wire.Sign(&cp, priv); err != nil {
		return 0, fmt.Errorf("sign envelope: %w", err)
	}
	var b []byte
	if c == wire.PayloadMsgpack {
		b, err = wire.EncodeEnvelopeMsgpack(&cp)
	} else {
		b, err = wire.EncodeEnvelopeJSON(&cp)
	}
	if err != nil {
		return 0, fmt.Errorf("encode envelope: %w", err)
	}
	return len(b), nil
}
