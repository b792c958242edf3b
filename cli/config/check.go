package config

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
)

// MinAdminToken is the shortest SYNAPSE_ADMIN_TOKEN an agent accepts: a
// shorter one is guessable by anyone who can reach the port.
const MinAdminToken = 16

// Check reads the file at path and the environment through getenv as
// Load does and returns every problem an agent starting on them would
// meet: the file's syntax (one problem, with its line and column: nothing
// after it can be read), then every bad value of every section, the
// agent's own among them (which Load leaves to agent.New). A nil result
// means the file is good.
func Check(path string, getenv func(string) string) []error {
	_, _, errs := Read(path, getenv)
	return errs
}

// Read is Check that also returns the configuration read and the
// SHA-256 of the file's bytes in hex (empty when the file cannot be
// read). The configuration is good only when there are no problems: a
// reload applies nothing of it otherwise.
func Read(path string, getenv func(string) string) (File, string, []error) {
	return ReadOverlaid(path, nil, getenv)
}

// ReadOverlaid is Read with a remote config fragment (nil: none) decoded
// over the file, as LoadOverlaid does; the hash is OverlaidHash's.
func ReadOverlaid(path string, overlay []byte, getenv func(string) string) (File, string, []error) {
	f := Defaults()
	raw, err := readFile(path)
	if err != nil {
		return f, "", []error{err}
	}
	hash := OverlaidHash(raw, overlay)
	if err := decodeFile(&f, path, raw); err != nil {
		return f, hash, []error{err}
	}
	if err := decodeOverlay(&f, path, overlay); err != nil {
		return f, hash, []error{err}
	}
	if err := LoadEnv(&f, getenv); err != nil {
		return f, hash, []error{err}
	}
	errs := flatten(f.Validate())
	if err := CheckAdminToken(f.AdminToken); err != nil {
		errs = append(errs, err)
	}
	return f, hash, errs
}

// CheckAdminToken refuses an admin token (SYNAPSE_ADMIN_TOKEN) shorter
// than MinAdminToken; an empty one is fine (the agent generates one).
func CheckAdminToken(tok string) error {
	if n := len(tok); n > 0 && n < MinAdminToken {
		return fmt.Errorf("SYNAPSE_ADMIN_TOKEN is %d bytes; an admin token must have at least %d (e.g. openssl rand -hex 16), or leave it unset to have one generated", n, MinAdminToken)
	}
	return nil
}

// flatten returns the leaves of a tree of errors.Join results, in order.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// decodeError says where in raw a JSON decoding error is: line and column
// (1-based) of its offset (at, where the decoder stopped, for errors
// without one: an unknown field), and for a wrong type the field it was
// for, named as in the file.
func decodeError(path string, raw []byte, at int64, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		// Offset counts the bytes read, the offending one included.
		line, col := position(raw, syn.Offset-1)
		return fmt.Errorf("config %s:%d:%d: %w", path, line, col, err)
	case errors.As(err, &typ):
		line, col := position(raw, typ.Offset)
		// Field is the Go path: the embedded sections' type names
		// (agent.Config, handlers.Config) are not keys of the file.
		field := strings.TrimPrefix(strings.TrimPrefix(typ.Field, "Config."), "Handlers.")
		return fmt.Errorf("config %s:%d:%d: %s: a JSON %s is not a %s", path, line, col, field, typ.Value, typ.Type)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// The decoder stops at the end of the object: the key itself is
		// where the reader should look.
		if i := keyOffset(raw, name); i >= 0 {
			at = i
		}
		line, col := position(raw, at)
		return fmt.Errorf("config %s:%d:%d: unknown key %s (misspelt, or not an option of this version)", path, line, col, name)
	}
	line, col := position(raw, at)
	return fmt.Errorf("config %s:%d:%d: %w", path, line, col, err)
}

// keyOffset is the offset of the first occurrence of quoted (a JSON
// string with its quotes) used as an object key in raw, or -1.
func keyOffset(raw []byte, quoted string) int64 {
	for off := 0; ; {
		i := bytes.Index(raw[off:], []byte(quoted))
		if i < 0 {
			return -1
		}
		i += off
		rest := bytes.TrimLeft(raw[i+len(quoted):], " \t\r\n")
		if len(rest) > 0 && rest[0] == ':' {
			return int64(i)
		}
		off = i + len(quoted)
	}
}

// position is the line and column of byte offset off of raw.
func position(raw []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(raw)); i++ {
		if raw[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// hashOf is the SHA-256 of a config file's bytes, in hex.
func hashOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// readFile reads the config file, naming it in the error.
func readFile(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return raw, nil
}
