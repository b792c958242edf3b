package agent

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/synapse-edge/synapse/wire"
)

// subBuffer is how many events a subscriber may fall behind before it is
// dropped; a dropped subscriber catches up from the store.
const subBuffer = 256

// Subscription receives a task's events after they are durable.
type Subscription struct {
	// C delivers events in order. It is closed when the subscriber fell too
	// far behind (Lagged is then true) or when Close is called.
	C      chan *wire.Event
	lagged bool
	hub    *hub
	taskID string
	once   sync.Once
}

// Lagged reports whether the channel was closed because the reader was too
// slow; the reader should reload events from the store.
func (s *Subscription) Lagged() bool {
	s.hub.mu.Lock()
	defer s.hub.mu.Unlock()
	return s.lagged
}

// Close stops delivery.
func (s *Subscription) Close() {
	s.once.Do(func() { s.hub.remove(s) })
}

type hub struct {
	mu   sync.Mutex
	subs map[string][]*Subscription
}

func (h *hub) subscribe(taskID string) *Subscription {
	s := &Subscription{C: make(chan *wire.Event, subBuffer), hub: h, taskID: taskID}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.subs == nil {
		h.subs = map[string][]*Subscription{}
	}
	h.subs[taskID] = append(h.subs[taskID], s)
	return s
}

func (h *hub) remove(s *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.detach(s)
}

// detach removes s and closes its channel; h.mu is held.
func (h *hub) detach(s *Subscription) {
	list := h.subs[s.taskID]
	for i, x := range list {
		if x == s {
			list = append(list[:i], list[i+1:]...)
			close(s.C)
			break
		}
	}
	if len(list) == 0 {
		delete(h.subs, s.taskID)
	} else {
		h.subs[s.taskID] = list
	}
}

// allTasks is the hub key of the subscriptions to every task's events
// (no task id has a NUL).
const allTasks = "\x00all"

// SubscribeAll delivers the future events of every task, as Subscribe
// does for one.
func (a *Agent) SubscribeAll() *Subscription { return a.eng.hub.subscribe(allTasks) }

// publish delivers events without blocking.
func (h *hub) publish(taskID string, evs []*wire.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.subs) == 0 {
		return
	}
	var slow []*Subscription
	for _, list := range [2][]*Subscription{h.subs[taskID], h.subs[allTasks]} {
		for _, s := range list {
			for _, e := range evs {
				select {
				case s.C <- e:
					continue
				default:
				}
				s.lagged = true
				slow = append(slow, s)
				break
			}
		}
	}
	for _, s := range slow {
		h.detach(s)
	}
}

// closeAll ends every subscription (shutdown).
func (h *hub) closeAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, list := range h.subs {
		for _, s := range append([]*Subscription(nil), list...) {
			h.detach(s)
		}
	}
}

// The data of the engine's events: structs rather than maps, their fields
// in the order of the keys encoding/json writes for a map, so the JSON is
// what it was; eventData writes the common ones without reflection (the
// same bytes as json.Marshal, events_data_test.go).
type statusEvent struct {
	From     wire.Status `json:"from"`
	Message  string      `json:"message"`
	Progress int         `json:"progress"`
	Status   wire.Status `json:"status"`
	TaskID   string      `json:"task_id"`
}

type errorEvent struct {
	Code        wire.ErrorCode `json:"code"`
	Message     string         `json:"message"`
	NumericCode int            `json:"numeric_code,omitempty"`
	Recoverable bool           `json:"recoverable"`
	TaskID      string         `json:"task_id"`
}

type progressEvent struct {
	Message  string `json:"message"`
	Progress int    `json:"progress"`
	TaskID   string `json:"task_id"`
}

type logEvent struct {
	Line   string `json:"line"`
	TaskID string `json:"task_id"`
}

// eventData encodes an event's data.
func eventData(data any) ([]byte, error) {
	switch d := data.(type) {
	case *statusEvent:
		return statusEventJSON(d), nil
	case *errorEvent:
		return errorEventJSON(d), nil
	case *progressEvent:
		b := make([]byte, 0, 64+len(d.Message)+len(d.TaskID))
		b = append(b, `{"message":`...)
		b = wire.AppendJSONString(b, d.Message, true)
		b = append(b, `,"progress":`...)
		b = strconv.AppendInt(b, int64(d.Progress), 10)
		b = append(b, `,"task_id":`...)
		b = wire.AppendJSONString(b, d.TaskID, true)
		return append(b, '}'), nil
	case *logEvent:
		b := make([]byte, 0, 32+len(d.Line)+len(d.TaskID))
		b = append(b, `{"line":`...)
		b = wire.AppendJSONString(b, d.Line, true)
		b = append(b, `,"task_id":`...)
		b = wire.AppendJSONString(b, d.TaskID, true)
		return append(b, '}'), nil
	case *wire.TaskStatusResponse:
		return wire.AppendStatusJSON(nil, d, true)
	}
	return json.Marshal(data)
}

func statusEventJSON(d *statusEvent) []byte {
	return appendStatusEventJSON(make([]byte, 0, 96+len(d.Message)+len(d.TaskID)), d)
}

func appendStatusEventJSON(b []byte, d *statusEvent) []byte {
	b = append(b, `{"from":`...)
	b = wire.AppendJSONString(b, string(d.From), true)
	b = append(b, `,"message":`...)
	b = wire.AppendJSONString(b, d.Message, true)
	b = append(b, `,"progress":`...)
	b = strconv.AppendInt(b, int64(d.Progress), 10)
	b = append(b, `,"status":`...)
	b = wire.AppendJSONString(b, string(d.Status), true)
	b = append(b, `,"task_id":`...)
	b = wire.AppendJSONString(b, d.TaskID, true)
	return append(b, '}')
}

func errorEventJSON(d *errorEvent) []byte {
	b := make([]byte, 0, 96+len(d.Message)+len(d.TaskID))
	b = append(b, `{"code":`...)
	b = wire.AppendJSONString(b, string(d.Code), true)
	b = append(b, `,"message":`...)
	b = wire.AppendJSONString(b, d.Message, true)
	if d.NumericCode != 0 {
		b = append(b, `,"numeric_code":`...)
		b = strconv.AppendInt(b, int64(d.NumericCode), 10)
	}
	b = append(b, `,"recoverable":`...)
	b = strconv.AppendBool(b, d.Recoverable)
	b = append(b, `,"task_id":`...)
	b = wire.AppendJSONString(b, d.TaskID, true)
	return append(b, '}')
}
