package group

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"

	"github.com/synapse-edge/synapse/store"
	"github.com/synapse-edge/synapse/wire"
)

// maxBodyBytes bounds the JSON body of a broadcast.
const maxBodyBytes = 64 << 10

// Send broadcasts a message to a group's members; any member may. It is
// recorded here at once; the owner's agent relays it to the others.
func (m *Manager) Send(ctx context.Context, groupID string, req MessageRequest) (*Message, error) {
	if req.Text == "" && len(req.Body) == 0 {
		return nil, invalid("text", "give a text, a body, or both")
	}
	if len(req.Text) > maxTextLen {
		return nil, invalid("text", "text must be at most %d bytes", maxTextLen)
	}
	if len(req.Body) > 0 {
		if len(req.Body) > maxBodyBytes || !json.Valid(req.Body) {
			return nil, invalid("body", "body must be JSON of at most %d bytes", maxBodyBytes)
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("message id: %w", err)
	}
	msg := &Message{MessageID: id.String(), GroupID: groupID, From: m.me, Text: req.Text, Body: req.Body,
		SentAt: wire.Time{Time: m.now()}}
	err = m.update(ctx, func(tx *store.Tx) error {
		g, err := loadActive(tx, groupID)
		if err != nil {
			return err
		}
		if g.Standing != StandingMember {
			return denied("only members of group %s may send to it", groupID)
		}
		if err := m.record(tx, groupID, msg.MessageID, wire.MsgGroupMessage, m.me, msg); err != nil {
			return err
		}
		if g.Owner == m.me {
			return m.announce(tx, g, wire.MsgGroupMessage, msg)
		}
		return m.send(tx, g.Owner, wire.MsgGroupMessage, msg)
	})
	if err != nil {
		return nil, err
	}
	return msg, nil
}

// messageFrom handles group:message: from a member on the owner's agent
// (recorded and relayed to the other members), from the owner elsewhere.
func (m *Manager) messageFrom(ctx context.Context, from string, msg *Message) error {
	if err := checkID("group_id", msg.GroupID); err != nil {
		return err
	}
	if err := checkID("message_id", msg.MessageID); err != nil {
		return err
	}
	if len(msg.Text) > maxTextLen || len(msg.Body) > maxBodyBytes {
		return invalid("text", "the message is larger than a group message may be")
	}
	owner := m.ownerOf(msg.GroupID) == m.me
	return m.update(ctx, func(tx *store.Tx) error {
		g, err := getGroup(tx, msg.GroupID)
		if err != nil {
			if owner {
				return err
			}
			m.log.Debug("message for an unknown group", "group_id", msg.GroupID, "from", from)
			return nil
		}
		if !owner {
			if err := fromOwner(g, from, wire.MsgGroupMessage); err != nil {
				return err
			}
			return m.record(tx, g.GroupID, msg.MessageID, wire.MsgGroupMessage, msg.From, msg)
		}
		if g.Status == StatusDisbanded {
			return conflict("group_disbanded", "group %s is disbanded", g.GroupID)
		}
		if g.member(from) == nil {
			return denied("%s is not a member of group %s", from, g.GroupID)
		}
		if msg.From != from {
			return denied("%s cannot send a message in the name of %s", from, msg.From)
		}
		dup, err := m.recordNew(tx, g.GroupID, msg.MessageID, wire.MsgGroupMessage, from, msg)
		if err != nil || dup {
			return err // a message relayed already is not relayed again
		}
		return m.announce(tx, g, wire.MsgGroupMessage, msg, from)
	})
}
