// Package group lets agents on different hosts form groups that organise,
// vote and share work (SPEC §10; seed 000 GroupManager, VotingHandler and
// GroupTaskHandler; seed 003 GroupService).
//
// # Coordination
//
// A group is created on one agent, its owner, whose agent coordinates it:
// the owner's agent holds the authoritative record (members, invitations,
// votes with their ballots, group tasks) and every change is made there.
// Members are agents paired with the owner's agent (both ways: each pins
// the other's key); they need not be paired with each other, because
// everything travels through the owner's agent (a star).
//
// An action taken on a member's agent that only the owner's agent can
// carry out (a join, a vote proposal, a ballot, a broadcast, a group task,
// an admin's invitation or disbanding) is checked against the member's copy
// of the group, then sent to the owner's agent as a group:* envelope; the
// HTTP answer is then 202 Accepted. The owner's agent checks it again
// (roles, invitations, membership), applies it, and announces the outcome
// to the members as group:* envelopes. Every announcement is written to the
// owner's outbox in the transaction of the change it announces, so members
// that were offline receive it when they return (SPEC §6 store and
// forward), in order.
//
// The same message type is a request when it reaches the owner's agent and
// an announcement when it reaches a member; a member accepts announcements
// only from the group's owner.
//
// # Membership
//
// Roles are owner, admin and member; each member has a weight (default 1,
// at most six decimal places) used by weighted votes. The owner or an
// admin invites a paired agent (group:invite), which joins (group:join) or
// ignores the invitation; a member leaves (group:leave), or is removed by
// the owner or an admin; the owner or an admin disbands the group
// (group:disband), anyone else gets 403. Announcements carry the whole
// group record with a version that grows with every change, so a copy is
// replaced only by a newer one.
//
// # Votes
//
// Any member proposes a vote: options, a consensus type, a quorum and a
// deadline on the owner agent's clock. The voters are the members at the
// moment the vote opens; each casts one ballot (casting again replaces
// it); a ballot from anyone else is refused (403), and one after the close
// is refused with 409. The vote closes at its deadline, or as soon as
// every voter has cast a ballot; the result, with the full tally (every
// ballot, the counts, and for ranked votes every round), goes to every
// member as group:vote_result. The tally rules are those of Count.
//
// # Group tasks
//
// A group task is a task the owner's agent distributes to the members
// whose declared task types (sent with their join) include its type, or to
// the members named in the request: to each the whole payload (fanout), or
// to each a part of a list field of the payload (split). The parts travel
// through the normal delegation machinery (a task submitted with a target,
// p2p:task_request and the reports back; the owner's own part runs
// locally). Results are aggregated as all (every result, in part order),
// first (the first result; the other parts are cancelled) or majority (the
// result more than half of the parts returned). A part that fails, is
// refused or does not finish by the group task's deadline is cancelled and
// listed in missing with its reason. The final record goes to every member
// as group:task_result.
//
// # Events
//
// Every agent keeps a log of each group's events as it saw them
// (creation, invitations, joins, leaves, votes opened and closed,
// messages, group tasks), numbered per group, the last 1000 kept. It is
// read with Events and followed with Subscribe (the WebSocket
// GET /group/{id}/messages/stream).
package group
