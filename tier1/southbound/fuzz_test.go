package southbound_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/synapse-edge/synapse/tier1"
	"github.com/synapse-edge/synapse/tier1/southbound"
)

// FuzzBatch maps arbitrary payloads (seeds: testdata/payloads) through the
// example route: a message is refused with ErrBadMessage or becomes a
// batch that the ingest decoder takes, with the batch_id of the message.
func FuzzBatch(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "payloads", "*"))
	if len(files) == 0 {
		f.Fatal("no corpus in testdata/payloads")
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add("plant/a/temp", b)
	}
	m := compile(f, exampleRoute)
	reg := registry(f)
	f.Fuzz(func(t *testing.T, topic string, payload []byte) {
		b, err := m.Batch(nil, topic, payload)
		if err != nil {
			if !errors.Is(err, southbound.ErrBadMessage) {
				t.Fatalf("error without ErrBadMessage: %v", err)
			}
			return
		}
		batch, err := tier1.DecodeBatch(b, reg, tier1.Limits{})
		if err != nil {
			if errors.Is(err, tier1.ErrTooManyFrames) {
				t.Fatal(err)
			}
			// Strings beyond the ingest limit are refused there.
			return
		}
		if len(batch.Frames) != 1 || batch.BatchID != southbound.BatchID(topic, payload) {
			t.Fatalf("batch %+v", batch)
		}
	})
}
