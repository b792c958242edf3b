package httpapi_test

import (
	"net/http"
	"testing"
)

// TestAuditAfter: the after cursor of GET /audit is a record seq over the
// whole uint64 range, also on 32-bit targets where int is 32 bits; anything
// that is not a whole number is a 400 naming the field.
func TestAuditAfter(t *testing.T) {
	ts := startServer(t)
	for _, after := range []string{"0", "4294967296", "18446744073709551615"} {
		r := ts.do(t, "GET", api("/audit?after="+after), nil)
		r.wantStatus(t, http.StatusOK)
		if recs, ok := r.object(t)["records"].([]any); !ok || len(recs) != 0 {
			t.Errorf("after=%s: records = %s, want []", after, r.body)
		}
	}
	for _, after := range []string{"-1", "x", "18446744073709551616"} {
		r := ts.do(t, "GET", api("/audit?after="+after), nil)
		if e := r.wantError(t, http.StatusBadRequest, "invalid_params"); e != nil {
			if f, _ := e["details"].(map[string]any); f == nil || f["field"] != "after" {
				t.Errorf("after=%s: error %v, want details.field after", after, e)
			}
		}
	}
}
