package mqtt

import (
	"bytes"
	"sort"
	"sync"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// copyStore is the client library's in-flight store (the QoS 1 messages
// awaiting their PUBACK, sent again after a reconnect), keeping each packet
// encoded. The library's MemoryStore keeps the packet itself, which its
// reconnect path then marks as a duplicate while the sending goroutine may
// be writing the same packet (a data race the race detector reports);
// here every Get returns a packet of its own. It lives in memory: what
// must survive the agent's own restart is in its store (the tier-1 queue,
// the outbox), not here.
type copyStore struct {
	mu   sync.Mutex
	m    map[string]stored
	next uint64
}

// stored is one encoded packet; n orders them as they were put, which is
// the order All gives them back in (the order they are sent again).
type stored struct {
	n uint64
	b []byte
}

var _ paho.Store = (*copyStore)(nil)

func newCopyStore() *copyStore { return &copyStore{m: map[string]stored{}} }

func (s *copyStore) Open()  {}
func (s *copyStore) Close() {}

func (s *copyStore) Put(key string, p packets.ControlPacket) {
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		return
	}
	s.mu.Lock()
	s.next++
	s.m[key] = stored{n: s.next, b: b.Bytes()}
	s.mu.Unlock()
}

func (s *copyStore) Get(key string) packets.ControlPacket {
	s.mu.Lock()
	e, ok := s.m[key]
	s.mu.Unlock()
	if !ok {
		return nil
	}
	p, err := packets.ReadPacket(bytes.NewReader(e.b))
	if err != nil {
		return nil
	}
	return p
}

func (s *copyStore) All() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.m))
	for k := range s.m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return s.m[keys[i]].n < s.m[keys[j]].n })
	return keys
}

func (s *copyStore) Del(key string) {
	s.mu.Lock()
	delete(s.m, key)
	s.mu.Unlock()
}

func (s *copyStore) Reset() {
	s.mu.Lock()
	s.m = map[string]stored{}
	s.mu.Unlock()
}
