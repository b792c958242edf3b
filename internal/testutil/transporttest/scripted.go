// Package transporttest is a destination for tests as a
// transport.Transport: no server and no socket, for the tests of what
// sends through the seam (the outbox's retries, back-off, dead letters
// and requeue).
//
//	fake := &transporttest.Scripted{}
//	fake.Add(transport.Outcome{Class: transport.Retry, Status: 503}) // the first send
//	... sends ...
//	for _, m := range fake.Sent() { ... }
package transporttest

import (
	"context"
	"fmt"
	"sync"

	"github.com/synapse-edge/synapse/transport"
)

// Scripted answers each Send with the next outcome of its script, and
// with Delivered (200) once the script is done; it records every message
// it was given. It is safe for concurrent use.
type Scripted struct {
	mu     sync.Mutex
	script []transport.Outcome
	sent   []transport.Message
}

var _ transport.Transport = (*Scripted)(nil)

// Send records m and answers the script's next outcome. An outcome not
// delivered without an error gets one that wraps
// transport.ErrNotDelivered.
func (s *Scripted) Send(_ context.Context, m *transport.Message) transport.Outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sent = append(s.sent, *m)
	if len(s.script) == 0 {
		return transport.Outcome{Class: transport.Delivered, Status: 200}
	}
	o := s.script[0]
	s.script = s.script[1:]
	if o.Err == nil && o.Class != transport.Delivered {
		o.Err = fmt.Errorf("%w: scripted %v", transport.ErrNotDelivered, o.Class)
	}
	return o
}

// Add appends outcomes to the script.
func (s *Scripted) Add(o ...transport.Outcome) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, o...)
}

// Sends is how many messages Send was given.
func (s *Scripted) Sends() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sent)
}

// Sent is a copy of the messages Send was given, in order.
func (s *Scripted) Sent() []transport.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]transport.Message(nil), s.sent...)
}
