package wire_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/wire"
)

// hmacVectorFile is the layout of testdata/vectors/hmac.json.
type hmacVectorFile struct {
	Description string           `json:"description"`
	Cases       []hmacVectorCase `json:"cases"`
}

type hmacVectorCase struct {
	Name string `json:"name"`
	// Secrets are used as their UTF-8 bytes.
	Secrets []string `json:"secrets"`
	T       int64    `json:"t"`
	Body    string   `json:"body"`
	// SignedPayload is "<t>.<body>", the HMAC input.
	SignedPayload string `json:"signed_payload"`
	// V1 holds the lowercase hex HMAC-SHA256 per secret, in order.
	V1     []string `json:"v1"`
	Header string   `json:"header"`
}

func hmacSecrets(c hmacVectorCase) [][]byte {
	var s [][]byte
	for _, x := range c.Secrets {
		s = append(s, []byte(x))
	}
	return s
}

func hmacGenerate() hmacVectorFile {
	v := hmacVectorFile{Description: "X-Synapse-Signature HMAC-SHA256 transport signatures; see README.md"}
	for _, c := range []hmacVectorCase{
		{Name: "single_secret", Secrets: []string{"whsec_synapse_test_1"}, T: 1779870660,
			Body: `{"task_id":"0192f3a4-5b6c-7d8e-9f01-23456789abcd","status":"completed","result_json":"{\"ok\":true}"}`},
		{Name: "rotation_two_secrets", Secrets: []string{"whsec_synapse_old", "whsec_synapse_new"}, T: 1779870661,
			Body: `{"event":"complete"}`},
		{Name: "empty_body", Secrets: []string{"k"}, T: 0, Body: ""},
	} {
		ts := strconv.FormatInt(c.T, 10)
		c.SignedPayload = ts + "." + c.Body
		for _, s := range c.Secrets {
			c.V1 = append(c.V1, hmacReference([]byte(s), ts, []byte(c.Body)))
		}
		c.Header = wire.SignHMACKeys(hmacSecrets(c), time.Unix(c.T, 0), []byte(c.Body))
		v.Cases = append(v.Cases, c)
	}
	return v
}

// hmacReference computes one v1 value straight from the definition.
func hmacReference(secret []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts + "." + string(body)))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestHMACVectors(t *testing.T) {
	var v hmacVectorFile
	sigLoadVectors(t, "hmac.json", &v, func() any { return hmacGenerate() })
	if len(v.Cases) != 3 {
		t.Fatalf("got %d cases, want 3", len(v.Cases))
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			secrets := hmacSecrets(c)
			now := time.Unix(c.T, 0)
			if got := wire.SignHMACKeys(secrets, now, []byte(c.Body)); got != c.Header {
				t.Errorf("SignHMACKeys = %s, want %s", got, c.Header)
			}
			if len(c.Secrets) == 1 {
				if got := wire.SignHMAC(secrets[0], now, []byte(c.Body)); got != c.Header {
					t.Errorf("SignHMAC = %s, want %s", got, c.Header)
				}
			}
			want := "t=" + strconv.FormatInt(c.T, 10) + ",v1=" + strings.Join(c.V1, ",v1=")
			if c.Header != want {
				t.Errorf("vector header %s is not t and the v1 list %s", c.Header, want)
			}
			if got := strconv.FormatInt(c.T, 10) + "." + c.Body; got != c.SignedPayload {
				t.Errorf("signed payload %q, want %q", c.SignedPayload, got)
			}
			for i, s := range secrets {
				if got := hmacReference(s, strconv.FormatInt(c.T, 10), []byte(c.Body)); got != c.V1[i] {
					t.Errorf("v1[%d] = %s, want %s", i, c.V1[i], got)
				}
				// Any one of the secrets verifies the whole header.
				if err := wire.VerifyHMAC(c.Header, [][]byte{s}, []byte(c.Body), now, 0); err != nil {
					t.Errorf("VerifyHMAC with secret %d: %v", i, err)
				}
			}
			if err := wire.VerifyHMAC(c.Header, secrets, []byte(c.Body), now, 0); err != nil {
				t.Errorf("VerifyHMAC: %v", err)
			}
			if err := wire.VerifyHMAC(c.Header, [][]byte{[]byte("other")}, []byte(c.Body), now, 0); !errors.Is(err, wire.ErrHMACMismatch) {
				t.Errorf("VerifyHMAC with another secret = %v, want ErrHMACMismatch", err)
			}
		})
	}
}

func TestVerifyHMAC(t *testing.T) {
	secret := []byte("s3cret")
	body := []byte(`{"a":1}`)
	now := time.Unix(1779870660, 0)
	good := wire.SignHMAC(secret, now, body)
	goodV1 := good[strings.Index(good, "v1="):]
	tests := []struct {
		name    string
		header  string
		secrets [][]byte
		body    []byte
		now     time.Time
		want    error
	}{
		{"valid", good, [][]byte{secret}, body, now, nil},
		{"300 s later", good, [][]byte{secret}, body, now.Add(300 * time.Second), nil},
		{"300 s earlier", good, [][]byte{secret}, body, now.Add(-300 * time.Second), nil},
		{"301 s later", good, [][]byte{secret}, body, now.Add(301 * time.Second), wire.ErrHMACStale},
		{"301 s earlier", good, [][]byte{secret}, body, now.Add(-301 * time.Second), wire.ErrHMACStale},
		{"other body", good, [][]byte{secret}, []byte(`{"a":2}`), now, wire.ErrHMACMismatch},
		{"other secret", good, [][]byte{[]byte("nope")}, body, now, wire.ErrHMACMismatch},
		{"no secrets", good, nil, body, now, wire.ErrHMACMismatch},
		{"rotation: new secret among old ones", good, [][]byte{[]byte("old"), secret}, body, now, nil},
		{"rotation: matching v1 second", "t=1779870660,v1=" + strings.Repeat("0", 64) + "," + goodV1, [][]byte{secret}, body, now, nil},
		{"spaces around entries", "t=1779870660 , " + goodV1, [][]byte{secret}, body, now, nil},
		{"unknown scheme ignored", "t=1779870660,v0=abc," + goodV1, [][]byte{secret}, body, now, nil},
		{"uppercase hex", "t=1779870660,v1=" + strings.ToUpper(goodV1[3:]), [][]byte{secret}, body, now, nil},
		{"empty", "", [][]byte{secret}, body, now, wire.ErrHMACMissing},
		{"blank", "   ", [][]byte{secret}, body, now, wire.ErrHMACMissing},
		{"no t", goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"empty t", "t=," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"non-numeric t", "t=abc," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"signed t", "t=+1779870660," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"negative t", "t=-1," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"fractional t", "t=1779870660.5," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"t overflowing int64", "t=99999999999999999999," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"t far future", "t=999999999999999999," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACStale},
		{"t twice", "t=1779870660,t=1779870660," + goodV1, [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"no v1", "t=1779870660", [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"entry without =", "t=1779870660,v1", [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"bad hex", "t=1779870660,v1=" + strings.Repeat("zz", 32), [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"short hex", "t=1779870660,v1=abcd", [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"long hex", "t=1779870660," + goodV1 + "00", [][]byte{secret}, body, now, wire.ErrHMACMalformed},
		{"garbage", "\x00\xff,,,", [][]byte{secret}, body, now, wire.ErrHMACMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := wire.VerifyHMAC(tt.header, tt.secrets, tt.body, tt.now, 0)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("VerifyHMAC(%.80q) = %v, want %v", tt.header, err, tt.want)
			}
		})
	}
}

func TestVerifyHMACTolerance(t *testing.T) {
	secret := []byte("k")
	now := time.Unix(1779870660, 0)
	h := wire.SignHMAC(secret, now, nil)
	if err := wire.VerifyHMAC(h, [][]byte{secret}, nil, now.Add(11*time.Second), 10*time.Second); !errors.Is(err, wire.ErrHMACStale) {
		t.Errorf("11 s off with 10 s tolerance: %v, want ErrHMACStale", err)
	}
	if err := wire.VerifyHMAC(h, [][]byte{secret}, nil, now.Add(10*time.Second), 10*time.Second); err != nil {
		t.Errorf("10 s off with 10 s tolerance: %v, want nil", err)
	}
}

func TestVerifyHMACHostileSizes(t *testing.T) {
	secret := []byte("k")
	body := []byte("b")
	now := time.Unix(1779870660, 0)
	v1 := hmacReference(secret, "1779870660", body)
	t.Run("10000 v1 entries", func(t *testing.T) {
		h := "t=1779870660" + strings.Repeat(",v1="+strings.Repeat("0", 64), 9999) + ",v1=" + v1
		start := time.Now()
		err := wire.VerifyHMAC(h, [][]byte{secret}, body, now, 0)
		if elapsed := time.Since(start); elapsed > 200*time.Millisecond {
			t.Errorf("took %v for a %d-byte header", elapsed, len(h))
		}
		if !errors.Is(err, wire.ErrHMACMalformed) {
			t.Errorf("VerifyHMAC = %v, want ErrHMACMalformed", err)
		}
	})
	t.Run("10000 short entries", func(t *testing.T) {
		h := "t=1779870660,v1=" + v1 + strings.Repeat(",", 10000)
		if err := wire.VerifyHMAC(h, [][]byte{secret}, body, now, 0); !errors.Is(err, wire.ErrHMACMalformed) {
			t.Errorf("VerifyHMAC = %v, want ErrHMACMalformed", err)
		}
	})
	t.Run("most entries allowed", func(t *testing.T) {
		h := "t=1779870660" + strings.Repeat(",v1="+strings.Repeat("0", 64), wire.MaxHMACEntries-2) + ",v1=" + v1
		if err := wire.VerifyHMAC(h, [][]byte{[]byte("a"), []byte("b"), secret}, body, now, 0); err != nil {
			t.Errorf("VerifyHMAC with %d entries = %v, want nil", wire.MaxHMACEntries, err)
		}
	})
}

func BenchmarkVerifyHMAC(b *testing.B) {
	secret := []byte("whsec_synapse_test_1")
	body := []byte(strings.Repeat(`{"k":"v"},`, 100))
	now := time.Unix(1779870660, 0)
	h := wire.SignHMAC(secret, now, body)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if err := wire.VerifyHMAC(h, [][]byte{secret}, body, now, 0); err != nil {
			b.Fatal(err)
		}
	}
}
