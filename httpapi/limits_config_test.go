package httpapi_test

import (
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/httpapi"
)

func TestLimitsValidate(t *testing.T) {
	if err := httpapi.DefaultLimits().Validate(); err != nil {
		t.Fatalf("the default limits are not valid: %v", err)
	}
	for _, tt := range []struct {
		field string
		set   func(*httpapi.Limits)
	}{
		{"http.max_body_bytes", func(l *httpapi.Limits) { l.MaxBodyBytes = 0 }},
		{"http.max_conns_per_ip", func(l *httpapi.Limits) { l.MaxConnsPerIP = 0 }},
		{"http.idle_timeout_seconds", func(l *httpapi.Limits) { l.IdleTimeoutSeconds = -5 }},
		{"http.max_inflight_body_bytes", func(l *httpapi.Limits) { l.MaxInflightBodyBytes = 0 }},
	} {
		l := httpapi.DefaultLimits()
		tt.set(&l)
		err := l.Validate()
		if err == nil || !strings.Contains(err.Error(), "config: "+tt.field+":") {
			t.Errorf("%s: Validate() = %v, want an error naming the field", tt.field, err)
		}
	}
}
