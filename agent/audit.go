package agent

import (
	"context"

	"github.com/synapse-edge/synapse/agent/auditdb"
	"github.com/synapse-edge/synapse/store"
)

// Kinds of audit records (TP §7.5): the security events an operator must be
// able to reconstruct.
const (
	AuditContractMade    = "contract_made"
	AuditContractRevoked = "contract_revoked"
	AuditDecrypted       = "payload_decrypted"
	AuditDecryptFailed   = "decrypt_failed"
	AuditSignatureFailed = "signature_failed"
)

// auditIn appends a record inside tx, so that it is in the log exactly when
// the event it records is stored.
func (a *Agent) auditIn(tx *store.Tx, kind, peer string, detail map[string]any) error {
	return auditdb.Append(tx, &auditdb.Record{At: a.clock.Now().UTC(), Kind: kind, Peer: peer, Detail: detail})
}

// audit appends a record of an event that stores nothing else (a refused
// message, a decryption); it is queued, not waited for.
func (a *Agent) audit(kind, peer string, detail map[string]any) {
	a.db.UpdateAsync(func(tx *store.Tx) error { return a.auditIn(tx, kind, peer, detail) }, func(err error) {
		if err != nil {
			a.log.Error("audit log", "kind", kind, "err", err)
		}
	})
}

// AuditLog returns up to limit audit records after seq after.
func (a *Agent) AuditLog(after uint64, limit int) ([]*auditdb.Record, error) {
	var out []*auditdb.Record
	err := a.db.View(func(tx *store.Tx) (err error) {
		out, err = auditdb.List(tx, after, limit)
		return err
	})
	if out == nil && err == nil {
		out = []*auditdb.Record{} // an empty log is an empty list
	}
	return out, err
}

// VerifyAudit checks the whole hash chain.
func (a *Agent) VerifyAudit(ctx context.Context) (auditdb.Report, error) {
	var rep auditdb.Report
	err := a.db.View(func(tx *store.Tx) error {
		rep = auditdb.Verify(tx)
		return ctx.Err()
	})
	return rep, err
}
