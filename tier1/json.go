package tier1

import (
	"encoding/base64"
	"math"
	"strconv"

	"github.com/synapse-edge/synapse/wire"
)

// AppendJSON appends f as a JSON object with the field names of d as keys,
// in descriptor order. Null values are left out. Numbers are written
// exactly (64-bit integers in full, floats in their shortest form as
// encoding/json writes them; NaN and infinities, which JSON cannot hold, as
// null); bins as base64 (standard alphabet, padded) strings.
func (f Frame) AppendJSON(dst []byte, d *Descriptor) []byte {
	dst = append(dst, '{')
	first := true
	for i := range min(len(f), len(d.Fields)) {
		v := f[i]
		if v.kind == KindNull {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = wire.AppendCanonicalJSONString(dst, d.Fields[i].Name)
		dst = append(dst, ':')
		dst = v.appendJSON(dst)
	}
	return append(dst, '}')
}

func (v Value) appendJSON(dst []byte) []byte {
	switch v.kind {
	case KindStr:
		return wire.AppendCanonicalJSONString(dst, v.s)
	case KindInt:
		return strconv.AppendInt(dst, int64(v.n), 10)
	case KindUint:
		return strconv.AppendUint(dst, v.n, 10)
	case KindFloat:
		return appendJSONFloat(dst, v.Float())
	case KindBool:
		return strconv.AppendBool(dst, v.n == 1)
	case KindBin:
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, []byte(v.s))
		return append(dst, '"')
	}
	return append(dst, "null"...)
}

// appendJSONFloat writes f like encoding/json does.
func appendJSONFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9.
		n := len(dst)
		if n >= 4 && dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst
}

// JSONObject returns f as a map from the field names of d to string,
// int64, uint64, float64, bool or []byte values, for encoding/json. Null
// values are left out; NaN and infinities become nil.
func (f Frame) JSONObject(d *Descriptor) map[string]any {
	m := make(map[string]any, len(d.Fields))
	for i := range min(len(f), len(d.Fields)) {
		v := f[i]
		var x any
		switch v.kind {
		case KindNull:
			continue
		case KindStr:
			x = v.s
		case KindInt:
			x = int64(v.n)
		case KindUint:
			x = v.n
		case KindFloat:
			if fl := v.Float(); !math.IsNaN(fl) && !math.IsInf(fl, 0) {
				x = fl
			}
		case KindBool:
			x = v.n == 1
		case KindBin:
			x = []byte(v.s)
		}
		m[d.Fields[i].Name] = x
	}
	return m
}
