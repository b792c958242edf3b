package agent

import "github.com/synapse-edge/synapse/agent/eventhub"

// Subscription receives a task's events after they are durable.
type Subscription = eventhub.Subscription

// SubscribeAll delivers the future events of every task, as Subscribe
// does for one.
func (a *Agent) SubscribeAll() *Subscription { return a.eng.hub.Subscribe(eventhub.All) }
