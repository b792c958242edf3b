package mqtt

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// validLevel reports whether s can be one level of a topic name that is
// published to: not empty, no '/', no wildcard, no NUL, valid UTF-8.
func validLevel(s string) bool {
	return s != "" && len(s) <= 1024 && utf8.ValidString(s) && !strings.ContainsAny(s, "/+#\x00")
}

// Topics builds the topic names of one agent under a prefix. Every level
// that comes from outside (agent, system and capability ids) is checked:
// a '/' or a wildcard in it would address someone else's topic.
type Topics struct {
	Prefix string
}

// Tier1 is {prefix}/{system_id}/{agent_id}/tier1/{capability_id}: where
// the agent publishes its stored tier-1 batches.
func (t Topics) Tier1(systemID, agentID, capabilityID string) (string, error) {
	for _, l := range []struct{ name, v string }{{"system_id", systemID}, {"agent_id", agentID}, {"capability_id", capabilityID}} {
		if !validLevel(l.v) {
			return "", fmt.Errorf("mqtt: %s %q cannot be a topic level", l.name, l.v)
		}
	}
	return t.Prefix + "/" + systemID + "/" + agentID + "/tier1/" + capabilityID, nil
}

// Inbox is {prefix}/agents/{agent_id}/inbox: where the agent takes
// envelopes for it and the answers to the envelopes it sent.
func (t Topics) Inbox(agentID string) (string, error) {
	if !validLevel(agentID) {
		return "", fmt.Errorf("mqtt: agent_id %q cannot be a topic level", agentID)
	}
	return t.Prefix + "/agents/" + agentID + "/inbox", nil
}

// Remote configuration (package cli/remoteconfig).

// ConfigDesired is {prefix}/agents/{agent_id}/config/desired: the
// retained desired document an operator publishes for the agent.
func (t Topics) ConfigDesired(agentID string) (string, error) {
	return t.agentTopic(agentID, "config/desired")
}

// ConfigReported is {prefix}/agents/{agent_id}/config/reported: the
// agent's retained, signed answer to the last desired document.
func (t Topics) ConfigReported(agentID string) (string, error) {
	return t.agentTopic(agentID, "config/reported")
}

// Self-update through the broker (package cli/remoteupdate).

// UpdateDesired is {prefix}/agents/{agent_id}/update/desired: the
// retained, operator-signed update command for the agent.
func (t Topics) UpdateDesired(agentID string) (string, error) {
	return t.agentTopic(agentID, "update/desired")
}

// UpdateReported is {prefix}/agents/{agent_id}/update/reported: the
// agent's retained, signed account of its last update command.
func (t Topics) UpdateReported(agentID string) (string, error) {
	return t.agentTopic(agentID, "update/reported")
}

// agentTopic is {prefix}/agents/{agent_id}/{rest}.
func (t Topics) agentTopic(agentID, rest string) (string, error) {
	if !validLevel(agentID) {
		return "", fmt.Errorf("mqtt: agent_id %q cannot be a topic level", agentID)
	}
	return t.Prefix + "/agents/" + agentID + "/" + rest, nil
}
