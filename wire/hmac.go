package wire

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// HMAC transport signature (SPEC §3, contract), for peers that share a
// secret and for callbacks to plain webhooks:
//
//	X-Synapse-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>...]
//
// where each <hex> is the lowercase hex HMAC-SHA256, keyed with one secret,
// of the bytes "<t>.<raw body>" (<t> exactly as written in the header). A
// sender rotating keys writes one v1 entry per secret; a receiver accepts
// the header when any v1 entry matches any of its secrets and t is within
// the tolerance of its clock. Entries are separated by commas, may be
// surrounded by spaces, and keys other than t and v1 are ignored (room for
// later schemes). Limits: MaxHMACHeaderBytes, MaxHMACEntries.

// Errors of VerifyHMAC.
var (
	// ErrHMACMissing: no signature header.
	ErrHMACMissing = errors.New("signature header missing")
	// ErrHMACMalformed: the header does not parse (no t, a t that is not
	// unix seconds, no v1, a v1 that is not 64 hex digits, too long).
	ErrHMACMalformed = errors.New("signature header malformed")
	// ErrHMACStale: t is outside the tolerance.
	ErrHMACStale = errors.New("signature timestamp outside the tolerance")
	// ErrHMACMismatch: no v1 entry matches any secret.
	ErrHMACMismatch = errors.New("signature does not match")
)

// HMAC header limits and defaults.
const (
	// HeaderSignature is the HTTP header that carries the HMAC signature.
	HeaderSignature = "X-Synapse-Signature"
	// HMACTolerance is the default largest distance between t and now.
	HMACTolerance = 300 * time.Second
	// MaxHMACHeaderBytes is the longest header VerifyHMAC parses.
	MaxHMACHeaderBytes = 2048
	// MaxHMACEntries is the most comma-separated entries VerifyHMAC parses.
	MaxHMACEntries = 16
)

// SignHMAC returns the header value signing body at time t with one secret.
func SignHMAC(secret []byte, t time.Time, body []byte) string {
	return SignHMACKeys([][]byte{secret}, t, body)
}

// SignHMACKeys returns the header value with one v1 entry per secret, in
// order (for key rotation: sign with the old and the new secret).
func SignHMACKeys(secrets [][]byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(ts)
	for _, s := range secrets {
		b.WriteString(",v1=")
		b.WriteString(hex.EncodeToString(hmacSum(s, ts, body)))
	}
	return b.String()
}

func hmacSum(secret []byte, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// VerifyHMAC checks a header value against body: it must parse, its t must
// be within tolerance of now (tolerance <= 0 means HMACTolerance), and one
// of its v1 entries must equal the HMAC of one of the secrets (compared in
// constant time). Errors wrap ErrHMACMissing, ErrHMACMalformed, ErrHMACStale
// or ErrHMACMismatch.
func VerifyHMAC(header string, secrets [][]byte, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = HMACTolerance
	}
	h, err := parseHMACHeader(header)
	if err != nil {
		return err
	}
	diff := now.Unix() - h.t // h.t >= 0, so this cannot overflow
	if diff < 0 {
		diff = -diff
	}
	if diff > int64(tolerance/time.Second) {
		return fmt.Errorf("%w: t=%s is %ds from local time, tolerance %v", ErrHMACStale, h.ts, diff, tolerance)
	}
	if len(secrets) == 0 {
		return fmt.Errorf("%w: no secret configured", ErrHMACMismatch)
	}
	for _, s := range secrets {
		want := hmacSum(s, h.ts, body)
		for _, got := range h.v1 {
			if hmac.Equal(got[:], want) {
				return nil
			}
		}
	}
	return ErrHMACMismatch
}

type hmacHeader struct {
	ts string // t as written
	t  int64
	v1 [][sha256.Size]byte
}

func parseHMACHeader(header string) (hmacHeader, error) {
	var h hmacHeader
	if strings.TrimSpace(header) == "" {
		return h, ErrHMACMissing
	}
	if len(header) > MaxHMACHeaderBytes {
		return h, fmt.Errorf("%w: %d bytes, limit %d", ErrHMACMalformed, len(header), MaxHMACHeaderBytes)
	}
	if n := strings.Count(header, ",") + 1; n > MaxHMACEntries {
		return h, fmt.Errorf("%w: %d entries, limit %d", ErrHMACMalformed, n, MaxHMACEntries)
	}
	for entry := range strings.SplitSeq(header, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(entry), "=")
		if !ok {
			return h, fmt.Errorf("%w: entry %q is not key=value", ErrHMACMalformed, entry)
		}
		switch key {
		case "t":
			if h.ts != "" {
				return h, fmt.Errorf("%w: t given twice", ErrHMACMalformed)
			}
			t, err := strconv.ParseInt(value, 10, 64)
			if err != nil || value == "" || strings.Trim(value, "0123456789") != "" {
				return h, fmt.Errorf("%w: t=%q is not unix seconds", ErrHMACMalformed, value)
			}
			h.ts, h.t = value, t
		case "v1":
			var sum [sha256.Size]byte
			if len(value) != hex.EncodedLen(sha256.Size) {
				return h, fmt.Errorf("%w: v1 has %d characters, want %d", ErrHMACMalformed, len(value), hex.EncodedLen(sha256.Size))
			}
			if _, err := hex.Decode(sum[:], []byte(value)); err != nil {
				return h, fmt.Errorf("%w: v1 is not hex", ErrHMACMalformed)
			}
			h.v1 = append(h.v1, sum)
		}
	}
	if h.ts == "" {
		return h, fmt.Errorf("%w: no t", ErrHMACMalformed)
	}
	if len(h.v1) == 0 {
		return h, fmt.Errorf("%w: no v1", ErrHMACMalformed)
	}
	return h, nil
}
