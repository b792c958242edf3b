package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// envDecoderReader is the reader UnmarshalJSON used before envScan, on
// encoding/json's Decoder: the reference envScan must agree with.
type envDecoderReader struct{ dec *json.Decoder }

func (r envDecoderReader) open() (bool, int, error) {
	tok, err := r.dec.Token()
	if err != nil {
		return false, 0, invalidf("%v", err)
	}
	if tok == nil {
		return false, 0, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return false, 0, invalidf("want an object, found %v", tok)
	}
	return true, -1, nil
}

func (r envDecoderReader) next(int, int) (string, bool, error) {
	if r.dec.More() {
		tok, err := r.dec.Token()
		if err != nil {
			return "", false, invalidf("%v", err)
		}
		key, _ := tok.(string)
		return key, true, nil
	}
	if _, err := r.dec.Token(); err != nil {
		return "", false, invalidf("%v", err)
	}
	return "", false, nil
}

func (r envDecoderReader) str(p *string) error { return r.dec.Decode(p) }

func (r envDecoderReader) hopCount() (int, error) {
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return 0, err
	}
	if string(raw) == "null" {
		return 0, nil
	}
	h, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is not an integer", raw)
	}
	return envClampHop(h), nil
}

func (r envDecoderReader) payload() (RawPayload, error) {
	var raw json.RawMessage
	if err := r.dec.Decode(&raw); err != nil {
		return RawPayload{}, err
	}
	return RawPayload{codec: PayloadJSON, raw: raw}, nil
}

func (r envDecoderReader) skip() error {
	var raw json.RawMessage
	return r.dec.Decode(&raw)
}

// decodeReference decodes b as UnmarshalJSON did with envDecoderReader.
func decodeReference(b []byte) (*UnifiedSynapseMessage, error) {
	m := new(UnifiedSynapseMessage)
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := envDecode(envDecoderReader{dec}, m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidf("data after the envelope object")
	}
	return m, m.Validate()
}

// decodeScan decodes b as UnmarshalJSON does.
func decodeScan(b []byte) (*UnifiedSynapseMessage, error) {
	m := new(UnifiedSynapseMessage)
	r := &envScan{b: b}
	if err := envDecode(r, m); err != nil {
		return nil, err
	}
	if !r.end() {
		return nil, invalidf("data after the envelope object")
	}
	return m, m.Validate()
}

// envScanSeeds are envelopes and near-envelopes that exercise the grammar.
func envScanSeeds(tb testing.TB) [][]byte {
	tb.Helper()
	var v struct {
		Cases []struct {
			Codec, Envelope string
		} `json:"cases"`
	}
	raw, err := os.ReadFile("testdata/vectors/ed25519.json")
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		tb.Fatal(err)
	}
	var out [][]byte
	for _, c := range v.Cases {
		if c.Codec == "json" {
			out = append(out, []byte(c.Envelope))
		}
	}
	base := `{"tp_version":"1.0.0","message_id":"0190a4b2-7c3e-7d4f-8a1b-2c3d4e5f6a7b","message_type":"p2p:heartbeat",` +
		`"sender":{"agent_id":"edge_a"},"receiver":{"agent_id":"edge_b"},"timestamp":"2026-01-02T03:04:05.678Z",%s}`
	for _, extra := range []string{
		`"payload":{"a":[1,-2.5e+3,true,false,null,"x\u00e9\ud83d\ude00\ud800\\/"]}`,
		`"payload":[]`, `"payload":{}`, `"payload":"\ud800\u0041"`, `"payload":0`, `"payload":-0.0E-0`,
		`"payload":01`, `"payload":1.`, `"payload":1e`, `"payload":.5`, `"payload":tru`, `"payload":nul`,
		`"payload":"a` + "\x01" + `"`, `"payload":"\x"`, `"payload":"\u12"`, `"payload":{"a" 1}`, `"payload":{"a":1,}`,
		`"payload":[1,]`, `"payload":[1 2]`, `"unknown":{"deep":[[[{}]]]}`, `"trace_info":{"hop_count":3}`,
		`"trace_info":{"hop_count":1.5}`, `"trace_info":{"hop_count":"3"}`, `"trace_info":{"hop_count":99999999999999999999}`,
		`"trace_info":null`, `"correlation_id":null`, `"correlation_id":5`, `"correlation_id":"a\"b"`,
		`"sender":{"agent_id":"edge_a"}`, `"\u0073ignature":"x"`, `"payload":{"k":"v"} ,"signature":"s"`,
		// Keys near the envelope's own (read as constants when they are one).
		`"tp_version\"x":1`, `"signatur":"x"`, `"signaturee":"x"`, `"sender` + "\x01" + `":{}`, `"hop_count":1`,
		`"agent_id":"x"`, `"trace_info":{"hop_count":1,"hop_count":2}`, `"trace_info":{"agent_id":"x"}`,
		`"receiver":{"agent_id":"b","endpoint\u0000":"e"}`, `"sender\/":{}`, `"trace_info":{"hop_count`,
		`"payload":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		`"payload":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998),
		`"payload":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
	} {
		out = append(out, []byte(fmt.Sprintf(base, extra)))
	}
	out = append(out, []byte(`null`), []byte(`[]`), []byte(` {} `), []byte(`{"a":1} x`), []byte(`{"a":1}{}`),
		[]byte(fmt.Sprintf(base, `"payload":1`)+"  \n"), []byte(`{`), []byte(`{"tp_version"`), []byte(``))
	return out
}

// FuzzEnvelopeJSONScan: envScan accepts exactly what encoding/json's
// Decoder accepted, and reads the same message from it.
func FuzzEnvelopeJSONScan(f *testing.F) {
	for _, s := range envScanSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !utf8.Valid(b) {
			return // refused before either reader
		}
		want, werr := decodeReference(b)
		got, gerr := decodeScan(b)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json: %v; envScan: %v", b, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: envScan read\n%+v\nencoding/json\n%+v", b, got, want)
		}
	})
}

func BenchmarkDecodeEnvelopeJSONReference(b *testing.B) {
	in := envScanSeeds(b)[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeReference(in); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEnvScanSeeds: the seeds that are envelopes decode the same with
// both readers (so the fuzz target compares messages, not only errors).
func TestEnvScanSeeds(t *testing.T) {
	decoded := 0
	for _, s := range envScanSeeds(t) {
		want, werr := decodeReference(s)
		got, gerr := decodeScan(s)
		if (werr == nil) != (gerr == nil) || werr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%.80q: envScan %+v, %v; encoding/json %+v, %v", s, got, gerr, want, werr)
		}
		if werr == nil {
			decoded++
		}
	}
	if decoded < 10 {
		t.Errorf("only %d seeds decode", decoded)
	}
}

func BenchmarkDecodeEnvelopeJSONScan(b *testing.B) {
	in := envScanSeeds(b)[0]
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeScan(in); err != nil {
			b.Fatal(err)
		}
	}
}
