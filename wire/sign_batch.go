package wire

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// Batch signatures (peer/p2p_batch.go; not part of the SPEC §3 contract,
// used only with peers that announce them).
//
// One Ed25519 signature over a whole batch body stands for the
// signatures of the envelopes in it, so a batch of n envelopes costs one
// signature and one verification instead of n of each. The signature is
// written base64 (standard alphabet, padded) over the four lines, joined
// by "\n" with no trailing line break,
//
//	synapse-batch-sig-v1
//	<sender agent_id>
//	<receiver agent_id>
//	<lowercase hex SHA-256 of the batch body>
//
// by the sender's identity key. Its own scheme line keeps it from ever
// being taken for an envelope signature (SigningInput starts with
// SignatureScheme), and the receiver's id keeps a batch from being
// replayed to another agent.

// BatchSignatureScheme is the first line of BatchSigningInput.
const BatchSignatureScheme = "synapse-batch-sig-v1"

// BatchSigningInput returns the bytes SignBatch signs and VerifyBatch
// checks.
func BatchSigningInput(sender, receiver string, body []byte) []byte {
	sum := sha256.Sum256(body)
	b := make([]byte, 0, len(BatchSignatureScheme)+len(sender)+len(receiver)+3+2*len(sum))
	b = append(b, BatchSignatureScheme...)
	b = append(b, '\n')
	b = append(b, sender...)
	b = append(b, '\n')
	b = append(b, receiver...)
	b = append(b, '\n')
	return hex.AppendEncode(b, sum[:])
}

// SignBatch is the signature of a batch body from sender to receiver.
func SignBatch(priv ed25519.PrivateKey, sender, receiver string, body []byte) (string, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return "", fmt.Errorf("sign batch: private key has %d bytes, want %d", len(priv), ed25519.PrivateKeySize)
	}
	if batchLineBreak(sender, receiver) {
		return "", fmt.Errorf("sign batch: %w: an agent id contains a line break", ErrEnvelopeInvalid)
	}
	return base64.StdEncoding.EncodeToString(ed25519.Sign(priv, BatchSigningInput(sender, receiver, body))), nil
}

// VerifyBatch checks a batch signature with the sender's public key.
// Every failure wraps ErrBadSignature.
func VerifyBatch(pub ed25519.PublicKey, sender, receiver string, body []byte, sig string) error {
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: public key has %d bytes, want %d", ErrBadSignature, len(pub), ed25519.PublicKeySize)
	}
	if len(sig) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
		return fmt.Errorf("%w: batch signature has %d characters, want %d", ErrBadSignature,
			len(sig), base64.StdEncoding.EncodedLen(ed25519.SignatureSize))
	}
	var raw [ed25519.SignatureSize + 2]byte
	n, err := base64.StdEncoding.Strict().Decode(raw[:], []byte(sig))
	if err != nil || n != ed25519.SignatureSize {
		return fmt.Errorf("%w: batch signature is not base64 of %d bytes", ErrBadSignature, ed25519.SignatureSize)
	}
	if batchLineBreak(sender, receiver) {
		return fmt.Errorf("%w: an agent id contains a line break", ErrBadSignature)
	}
	if !ed25519.Verify(pub, BatchSigningInput(sender, receiver, body), raw[:n]) {
		return fmt.Errorf("%w: the batch does not verify with the sender's key", ErrBadSignature)
	}
	return nil
}

// batchLineBreak tells whether an agent id of a batch holds a line break.
func batchLineBreak(sender, receiver string) bool {
	return strings.ContainsAny(sender, "\n\r") || strings.ContainsAny(receiver, "\n\r")
}
