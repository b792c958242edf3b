// Package main is the command minisign: it makes a release signing key and signs files in
// minisign's format (prehashed Ed25519, "ED"), so that `minisign -V` of
// the minisign tool verifies what it signs. It is a build tool of make
// dist, never linked into the agent.
//
//	go run ./build/minisign keygen -p minisign.pub -s minisign.key
//	go run ./build/minisign sign -s minisign.key -m dist/SHA256SUMS [-t COMMENT]
//
// The secret key file is this tool's own: "synapse-minisign-secret-key",
// then the key id and the Ed25519 seed, base64. It is made at release time
// and kept off the repository; keygen refuses to overwrite a file.
package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/blake2b"
)

const secretHeader = "synapse-minisign-secret-key"

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "minisign:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: minisign keygen -p PUB -s SECRET | sign -s SECRET -m FILE [-t COMMENT]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	pub := fs.String("p", "minisign.pub", "public key file")
	sec := fs.String("s", "minisign.key", "secret key file")
	msg := fs.String("m", "", "file to sign")
	comment := fs.String("t", "", "trusted comment (default: timestamp and file name)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	switch args[0] {
	case "keygen":
		return keygen(*pub, *sec, out)
	case "sign":
		if *msg == "" {
			return errors.New("sign: -m FILE is required")
		}
		return sign(*sec, *msg, *comment)
	}
	return fmt.Errorf("unknown command %q (keygen, sign)", args[0])
}

// keyID formats the 8 key id bytes as minisign prints them: the
// little-endian integer in upper-case hex.
func keyID(id []byte) string {
	return fmt.Sprintf("%016X", binary.LittleEndian.Uint64(id))
}

func keygen(pubPath, secPath string, out io.Writer) error {
	pk, sk, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	id := make([]byte, 8)
	if _, err := rand.Read(id); err != nil {
		return err
	}
	pubBlob := append(append([]byte("Ed"), id...), pk...)
	pubText := fmt.Sprintf("untrusted comment: minisign public key %s\n%s\n", keyID(id), base64.StdEncoding.EncodeToString(pubBlob))
	secText := fmt.Sprintf("%s\n%s\n", secretHeader, base64.StdEncoding.EncodeToString(append(append([]byte{}, id...), sk.Seed()...)))
	if err := writeNew(secPath, secText, 0o600); err != nil {
		return err
	}
	if err := writeNew(pubPath, pubText, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "key %s: public %s, secret %s\n", keyID(id), pubPath, secPath)
	return nil
}

func writeNew(path, text string, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func readSecret(path string) (id []byte, sk ed25519.PrivateKey, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 || strings.TrimSpace(lines[0]) != secretHeader {
		return nil, nil, fmt.Errorf("%s: not a secret key of this tool (first line %q)", path, secretHeader)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(lines[1]))
	if err != nil || len(raw) != 8+ed25519.SeedSize {
		return nil, nil, fmt.Errorf("%s: the key line is not 40 base64 bytes", path)
	}
	return raw[:8], ed25519.NewKeyFromSeed(raw[8:]), nil
}

func sign(secPath, msgPath, comment string) error {
	id, sk, err := readSecret(secPath)
	if err != nil {
		return err
	}
	msg, err := os.ReadFile(msgPath)
	if err != nil {
		return err
	}
	if comment == "" {
		comment = fmt.Sprintf("timestamp:%d\tfile:%s\thashed", time.Now().Unix(), filepath.Base(msgPath))
	}
	if strings.ContainsAny(comment, "\r\n") {
		return errors.New("the trusted comment must be one line")
	}
	text := signature(id, sk, msg, comment)
	return os.WriteFile(msgPath+".minisig", []byte(text), 0o644)
}

// signature is the .minisig text: the prehashed signature of msg
// (BLAKE2b-512, algorithm "ED") and the global signature over it and the
// trusted comment.
func signature(id []byte, sk ed25519.PrivateKey, msg []byte, comment string) string {
	h := blake2b.Sum512(msg)
	sig := ed25519.Sign(sk, h[:])
	blob := append(append([]byte("ED"), id...), sig...)
	global := ed25519.Sign(sk, append(append([]byte{}, sig...), comment...))
	var b bytes.Buffer
	fmt.Fprintf(&b, "untrusted comment: signature from minisign secret key %s\n", keyID(id))
	fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString(blob))
	fmt.Fprintf(&b, "trusted comment: %s\n", comment)
	fmt.Fprintf(&b, "%s\n", base64.StdEncoding.EncodeToString(global))
	return b.String()
}
