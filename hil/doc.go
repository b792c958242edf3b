// Package hil is the human-in-the-loop layer of an agent (SPEC §9, seed 000
// HILHandler and EscalationHandler): it finds the tasks that wait for a
// person, escalates them when nobody decides in time, notifies reviewers,
// keeps an audit trail, and applies people's decisions through
// agent.Agent.Decide. It creates no tasks: a task waits for a person when
// its handler calls Run.AskHuman, when the peer it was delegated to reports
// p2p:task_need_human, or when an approval policy holds it before it runs.
// All three leave the task in need_human with the request of seed 004 §6.8
// in its human field.
//
//	m := hil.New(a, hil.Options{Logger: log})
//	err := m.Start(ctx)   // after a.Open
//	defer m.Close(ctx)    // before a.Close
//	reqs := m.Pending()
//	r, err := m.Decide(ctx, principal, taskID, agent.DecisionRequest{Action: "approve"})
//
// # Requests
//
// A request is identified by its task id. The manager reads the agent's
// live tasks (memory only) each time the agent signals that a task entered
// or left need_human (agent.Agent.HumanChanged), and on every call that
// reads or decides, so a new request is seen as soon as it is stored.
// A task that asks a person again after a decision starts a new request
// under the same id; its record replaces the previous one, and the audit
// trail keeps the steps of both.
//
// # Escalation
//
// hil.levels lists the levels (default three: scopes hil:l1, hil:l2,
// hil:l3, 300 s each). A request starts at level 1, or at the
// escalation_level its payload names; the first level's deadline is the
// payload's deadline when it names one in the future, otherwise now plus
// the level's deadline_seconds. When a level's deadline passes without a
// decision the request moves to the next level with a fresh deadline; when
// the last level's deadline passes, hil.default_action (default reject) is
// applied by the principal "system:escalation". Deadlines are timers of the
// agent's clock (agent.Options.Clock), so tests move time by hand. After a
// restart a pending request resumes at its level; a deadline that passed
// while the agent was down moves it one level up with a fresh deadline.
//
// # Who may decide
//
// A principal may decide a request only at a level whose reviewers_scope
// its token holds; admin always may. Anyone with tasks:read or one of the
// levels' scopes may list and read requests.
//
// # Audit trail and task history
//
// Every step — created, escalated, notified, notify_failed, decided,
// default_applied, decision_failed, closed — is written to the store's hil
// bucket and, while the task is live, appended to the task's events as a
// log line starting with "hil:". Records of requests that are no longer
// pending are pruned with the agent's retention.max_age_hours, and beyond
// the newest KeepClosed.
//
// # Notifications
//
// A level with a notify_url gets the event as JSON (POST) when a request
// reaches that level, signed with X-Synapse-Signature when the agent has a
// callback secret (p2p.callback_secret_env). Delivery is best effort:
// NotifyAttempts tries, waiting NotifyBackoff, then twice that, between
// them (on the agent's clock), at most MaxNotifyInFlight at a time.
// Decisions never wait for notifications.
//
// # Events
//
// Subscribe delivers an Event (the request and what changed: created,
// escalated, decided, closed) for every change. Event ids increase within
// a process and start above those of earlier processes; the last
// RingSize events are kept in memory for resuming a stream.
package hil
