package hil

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/synapse-edge/synapse/hil/hildb"
	"github.com/synapse-edge/synapse/transport"
	"github.com/synapse-edge/synapse/wire"
)

// HeaderEvent names the kind of body a notification carries.
const HeaderEvent = transport.HeaderEvent

// errGone stops the attempts at a notification: the receiver will never
// take it (410 Gone, a refusal that says it is final).
var errGone = errors.New("refused for good")

// notify sends ev to the notify_url of level, if it has one, in the
// background; m.mu is held.
func (m *Manager) notify(ev Event, level int) {
	target := m.levels[level-1].NotifyURL
	if target == "" || m.closed {
		return
	}
	select {
	case m.notifying <- struct{}{}:
	default:
		m.log.Warn("notification skipped: too many in flight", "task_id", ev.TaskID, "level", level)
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			m.recordNotify(ev, level, StepNotifyFailed, "skipped: too many notifications in flight")
		}()
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() { <-m.notifying }()
		err := m.deliver(target, ev)
		if err != nil {
			m.log.Warn("notification failed", "task_id", ev.TaskID, "level", level, "err", err)
			m.recordNotify(ev, level, StepNotifyFailed, err.Error())
			return
		}
		m.recordNotify(ev, level, StepNotified, "delivered")
	}()
}

// deliver POSTs ev to target, trying NotifyAttempts times (once when the
// receiver refuses it for good).
func (m *Manager) deliver(target string, ev Event) error {
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	var last error
	for attempt := range NotifyAttempts {
		if attempt > 0 && !m.wait(m.opts.NotifyBackoff<<(attempt-1)) {
			return fmt.Errorf("shutting down after %d attempts: %w", attempt, last)
		}
		if last = m.post(target, body, ev.Change); last == nil {
			return nil
		}
		if errors.Is(last, errGone) {
			return last
		}
	}
	return fmt.Errorf("%d attempts: %w", NotifyAttempts, last)
}

func (m *Manager) post(target string, body []byte, change string) error {
	ctx, cancel := context.WithTimeout(m.bg, DefaultNotifyTimeout)
	defer cancel()
	h := map[string]string{"User-Agent": "synapse-hil", HeaderEvent: "hil." + change}
	if m.secret != nil {
		h[transport.HeaderSignature] = wire.SignHMAC(m.secret, m.clock.Now(), body)
	}
	// A Request, not a Callback: notify_url is the operator's, from the
	// config, and may well be on the plant network.
	o := m.t.Send(ctx, &transport.Message{Kind: transport.Request, To: target, Body: body,
		ContentType: wire.ContentJSON, Header: h})
	switch {
	case o.Delivered():
		return nil
	case o.Status == 0:
		// The transport's error leaves the URL (it may carry a secret)
		// out of the audit trail.
		return o.Err
	case o.Class == transport.Permanent:
		return fmt.Errorf("notify_url answered %d: %w", o.Status, errGone)
	}
	return fmt.Errorf("notify_url answered %d", o.Status)
}

// wait waits d on the agent's clock; false when the manager closes first.
func (m *Manager) wait(d time.Duration) bool {
	ch := make(chan struct{})
	t := m.clock.AfterFunc(d, func() { close(ch) })
	select {
	case <-ch:
		return true
	case <-m.stop:
		t.Stop()
		return false
	}
}

// recordNotify writes the outcome of a notification into the audit trail
// and the task's events.
func (m *Manager) recordNotify(ev Event, level int, step, detail string) {
	s := &hildb.Step{TaskID: ev.TaskID, At: m.clock.Now(), Step: step, Level: level, Detail: detail}
	if err := m.save(m.bg, change{steps: []*hildb.Step{s}}); err != nil {
		m.log.Error("record notification", "task_id", ev.TaskID, "err", err)
	}
	if step == StepNotified {
		m.a.NoteTask(ev.TaskID, fmt.Sprintf("hil: level %d reviewers notified", level))
	} else {
		m.a.NoteTask(ev.TaskID, fmt.Sprintf("hil: notifying level %d failed: %s", level, detail))
	}
}
