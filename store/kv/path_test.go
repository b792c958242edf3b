package kv

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"testing"
)

// refNames is the path decoder cutName replaced, over binary.Uvarint:
// the fuzz test holds the walks of a path to it.
func refNames(path string) ([][]byte, error) {
	var names [][]byte
	b := []byte(path)
	for len(b) > 0 {
		n, w := binary.Uvarint(b)
		if w <= 0 || n == 0 || n > uint64(len(b)-w) {
			return nil, errBadPath
		}
		names = append(names, b[w:w+int(n)])
		b = b[w+int(n):]
	}
	if len(names) == 0 {
		return nil, errBadPath
	}
	return names, nil
}

func TestPathKnownAnswer(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 200) // a length of two bytes
	for _, tc := range []struct {
		name   string
		path   string
		names  []string
		parent string
	}{
		{"one", "\x02t1", []string{"t1"}, ""},
		{"two", "\x02t1\x03cap", []string{"t1", "cap"}, "\x02t1"},
		{"three", "\x01a\x01b\x01c", []string{"a", "b", "c"}, "\x01a\x01b"},
		{"long name", "\x02t1\xc8\x01" + string(long), []string{"t1", string(long)}, "\x02t1"},
		{"length not minimal", "\x81\x00a", []string{"a"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			names, err := pathNames(tc.path)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, n := range names {
				got = append(got, string(n))
			}
			if len(got) != len(tc.names) {
				t.Fatalf("names %q, want %q", got, tc.names)
			}
			for i := range got {
				if got[i] != tc.names[i] {
					t.Fatalf("names %q, want %q", got, tc.names)
				}
			}
			if got, want := parentPath(tc.path), tc.parent; got != want {
				t.Errorf("parentPath %q, want %q", got, want)
			}
			if !validPath(tc.path) {
				t.Error("validPath false")
			}
		})
	}
}

func TestPathHostile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		hex     string
		firstOK bool // the first name is well-formed, a later one not
	}{
		{"empty", "", false},
		{"zero-length name", "00", false},
		{"zero-length name after one", "02743100", true},
		{"length past the end", "037431", false},
		{"second length past the end", "0274310561", true},
		{"length cut short", "80", false},
		{"length of eleven bytes", "8080808080808080808001", false},
		{"length over 64 bits", "ffffffffffffffffff0261", false},
		{"length near 2^64", "ffffffffffffffffff0161", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tc.hex)
			path := string(b)
			if _, err := pathNames(path); !errors.Is(err, errBadPath) {
				t.Errorf("pathNames: %v, want errBadPath", err)
			}
			if validPath(path) {
				t.Error("validPath true")
			}
			if got := parentPath(path); got != "" {
				t.Errorf("parentPath %q, want \"\"", got)
			}
			if _, _, ok := cutName(path); ok != tc.firstOK {
				t.Errorf("cutName ok %v, want %v", ok, tc.firstOK)
			}
		})
	}
}

// FuzzPathNames: whatever a path holds, cutName's walks (pathNames,
// validPath, parentPath) agree with the decoder over binary.Uvarint,
// and a path rebuilt from its names is the path (lengths written
// longer than needed aside).
func FuzzPathNames(f *testing.F) {
	for _, s := range []string{"\x02t1", "\x02t1\x03cap", "\x01a\x01b\x01c", "", "\x00", "\x80", "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01a"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		path := string(raw)
		want, wantErr := refNames(path)
		got, err := pathNames(path)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("pathNames err %v, reference %v", err, wantErr)
		}
		if validPath(path) != (wantErr == nil) {
			t.Fatalf("validPath %v, reference err %v", validPath(path), wantErr)
		}
		if err != nil {
			if p := parentPath(path); p != "" {
				t.Fatalf("parentPath of a malformed path %q", p)
			}
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%d names, reference %d", len(got), len(want))
		}
		rebuilt, parent := "", ""
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("name %d %q, reference %q", i, got[i], want[i])
			}
			parent = rebuilt
			rebuilt = childPath(rebuilt, got[i])
		}
		if p := parentPath(rebuilt); p != parent {
			t.Fatalf("parentPath %q, want %q", p, parent)
		}
		if p := parentPath(path); !bytes.HasPrefix(raw, []byte(p)) || (len(got) == 1) != (p == "") {
			t.Fatalf("parentPath %q of %q", p, path)
		}
	})
}

func BenchmarkParentPath(b *testing.B) {
	path := childPath(childPath(childPath("", []byte("hil")), []byte("requests")), []byte("t-1"))
	b.SetBytes(int64(len(path)))
	b.ReportAllocs()
	for b.Loop() {
		if parentPath(path) == "" {
			b.Fatal("no parent")
		}
	}
}
