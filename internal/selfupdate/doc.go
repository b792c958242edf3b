// Package selfupdate replaces the running agent's binary with a signed
// release and takes it back when the new one does not become healthy.
//
// What is trusted: a release public key of the agent's own config
// (update.release_keys, or update.release_keys_file beside the config), in
// minisign's format. A release is the bare binary and its .minisig: the
// Ed25519 signature, by one of those keys, of the BLAKE2b-512 hash of the
// binary's bytes (minisign's prehashed algorithm "ED", what `minisign -S`
// and build/minisign make and `minisign -Vm BINARY -p KEY` checks), and
// the global signature over that signature and the trusted comment. Legacy
// non-prehashed signatures ("Ed") and keys the config does not list are
// refused. A SHA-256, where one is given (the broker's update command),
// must match too, before anything is written.
//
// The swap (Install), in the binary's own directory so every rename is
// atomic: the new binary to a temporary file, synced; its --version run
// (it must print "synapse "); the current binary hard-linked (else
// copied) to NAME.prev; the state file NAME.update written ("trial");
// the temporary file renamed over NAME; the directory synced. At every
// instant NAME is a whole binary, the old one or the new one.
//
// The trial (Boot, at the start of serve): a binary that starts with a
// "trial" state file whose hash is its own is on trial. Its first start
// counts the attempt (durably) and watches its own health: SERVING within
// health_timeout_seconds commits the update ("ok"); otherwise, or when
// serve fails, the previous binary is put back ("rolled_back", with the
// reason) and started in its place. A second start of a binary still on
// trial means the first died (a crash, kill -9, a power cut): it rolls
// back at once. A trial state whose hash is not the binary's is a swap
// that did not finish; it is marked "aborted" and the binary serves.
package selfupdate
