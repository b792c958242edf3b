package client

import (
	"io"

	"github.com/synapse-edge/synapse/internal/eventstream"
)

// Limits of the event reader (package internal/eventstream).
const (
	// MaxEventLine is the longest line the reader accepts.
	MaxEventLine = eventstream.MaxLine
	// MaxEventData is the most data one event may carry.
	MaxEventData = eventstream.MaxData
)

// EventReader reads server-sent events from a byte stream.
type EventReader = eventstream.Reader

// NewEventReader returns a reader of the events in r.
func NewEventReader(r io.Reader) *EventReader { return eventstream.NewReader(r) }
