package tier1

import (
	"encoding/base64"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/wire"
)

const tokenRoutine = "synapse.telemetry"

// tokenVectors are known answers of the format-1 page token, computed from
// the layout in pagetoken.go by a separate implementation (Python: zigzag
// and unsigned LEB128 varints, a bitwise CRC-32C).
var tokenVectors = []struct {
	name string
	pos  pagePos
	tok  string
}{
	{"zero", pagePos{}, "p1.AAAAAB22h4k"},
	{"boiler", pagePos{ts: 1_790_000_000_123_456_789, device: "boiler-1", seq: 7, index: 3}, "p1.qrT2tIXhrdcxCGJvaWxlci0xBwPsWk71"},
	{"negative ts, long device", pagePos{ts: -5, device: strings.Repeat("d", 200), seq: 1 << 40, index: 1023},
		"p1.CcgB" + strings.Repeat("ZGRk", 66) + "ZGSAgICAgCD_B_xivR4"},
}

func TestPageTokenVectors(t *testing.T) {
	for _, v := range tokenVectors {
		t.Run(v.name, func(t *testing.T) {
			if got := encodePageToken(tokenRoutine, v.pos); got != v.tok {
				t.Errorf("encode = %s, want %s", got, v.tok)
			}
			got, err := decodePageToken(tokenRoutine, v.tok)
			if err != nil || got != v.pos {
				t.Errorf("decode = %+v, %v; want %+v", got, err, v.pos)
			}
		})
	}
}

// TestPageTokenRefused: hostile and stale tokens are invalid_params naming
// page_token, never a panic or a position.
func TestPageTokenRefused(t *testing.T) {
	good := tokenVectors[1].tok
	body, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(good, pageTokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	// sealed re-checks a hand-made body, so that only the field is wrong.
	sealed := func(fields []byte) string {
		return pageTokenPrefix + base64.RawURLEncoding.EncodeToString(binary.BigEndian.AppendUint32(fields, pageCheck(tokenRoutine, fields)))
	}
	flipped := append([]byte(nil), body...)
	flipped[3] ^= 0x10
	cases := []struct {
		name, tok, want string
	}{
		{"empty body", pageTokenPrefix, "not one this agent gave"},
		{"cut short", good[:len(good)-3], "not one this agent gave"},
		{"one bit flipped", pageTokenPrefix + base64.RawURLEncoding.EncodeToString(flipped), "not one this agent gave"},
		{"another routine's", encodePageToken("other.routine", tokenVectors[1].pos), "not one this agent gave"},
		{"not base64", pageTokenPrefix + "!!!!", "not one this agent gave"},
		{"padded base64", good + "=", "not one this agent gave"},
		{"unknown format", "p2." + strings.TrimPrefix(good, pageTokenPrefix), "not one this agent gave"},
		{"too long", pageTokenPrefix + strings.Repeat("A", maxPageToken), "not one this agent gave"},
		{"trailing byte", sealed(append(body[:len(body)-4:len(body)-4], 0)), "not one this agent gave"},
		{"device longer than the token", sealed([]byte{0x02, 0xff, 0xff, 0x03, 'a', 0x01, 0x00}), "not one this agent gave"},
		{"huge device length", sealed(append([]byte{0x02}, binary.AppendUvarint(nil, 1<<62)...)), "not one this agent gave"},
		{"index beyond 2^31", sealed(binary.AppendUvarint([]byte{0x02, 0x00, 0x01}, 1<<31)), "not one this agent gave"},
		{"varint overflow", sealed([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}), "not one this agent gave"},
		{"only a check", sealed(nil), "not one this agent gave"},
		{"junk", "hello", "not one this agent gave"},
		{"older format", base64.RawURLEncoding.EncodeToString(append(make([]byte, 17), 0, 5)), "older version"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := decodePageToken(tokenRoutine, c.tok)
			if err == nil {
				t.Fatalf("decode(%q) = %+v, want an error", c.tok, p)
			}
			we := wire.AsError(err)
			if we.Code != wire.CodeInvalidParams || we.Details["field"] != "page_token" || !strings.Contains(we.Message, c.want) {
				t.Errorf("error = %s %q %v, want invalid_params on page_token saying %q", we.Code, we.Message, we.Details, c.want)
			}
		})
	}
}

// FuzzPageToken: the decoder never panics, refuses with invalid_params,
// and what it accepts encodes back to a token that decodes the same.
func FuzzPageToken(f *testing.F) {
	for _, v := range tokenVectors {
		f.Add(v.tok)
	}
	f.Add(base64.RawURLEncoding.EncodeToString(append(make([]byte, 17), 0, 5)))
	f.Add(pageTokenPrefix)
	f.Fuzz(func(t *testing.T, tok string) {
		p, err := decodePageToken(tokenRoutine, tok)
		if err != nil {
			if we := wire.AsError(err); we.Code != wire.CodeInvalidParams {
				t.Fatalf("error %v is not invalid_params", err)
			}
			return
		}
		if p.index < 0 {
			t.Fatalf("negative index %d", p.index)
		}
		again, err := decodePageToken(tokenRoutine, encodePageToken(tokenRoutine, p))
		if err != nil || again != p {
			t.Fatalf("round trip of %+v = %+v, %v", p, again, err)
		}
	})
}

func BenchmarkPageToken(b *testing.B) {
	p := tokenVectors[1].pos
	tok := encodePageToken(tokenRoutine, p)
	b.SetBytes(int64(len(tok)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := decodePageToken(tokenRoutine, encodePageToken(tokenRoutine, p))
		if err != nil || got != p {
			b.Fatal(got, err)
		}
	}
}
