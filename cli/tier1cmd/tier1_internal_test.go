package tier1cmd

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/synapse-edge/synapse/client"
	"github.com/synapse-edge/synapse/tier1"
)

func TestGroupDigits(t *testing.T) {
	for _, tt := range []struct {
		in   int64
		want string
	}{{0, "0"}, {7, "7"}, {999, "999"}, {1000, "1,000"}, {12345, "12,345"}, {1234000, "1,234,000"}, {-1234567, "-1,234,567"}} {
		if got := groupDigits(tt.in); got != tt.want {
			t.Errorf("groupDigits(%d) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseTimeFlag(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct{ in, want, err string }{
		{"", "", ""},
		{"1700000000000000000", "1700000000000000000", ""},
		{"2025-01-02T03:04:05Z", "2025-01-02T03:04:05Z", ""},
		{"2025-01-02T03:04:05.5+02:00", "2025-01-02T03:04:05.5+02:00", ""},
		{"1h", strconv.FormatInt(now.Add(-time.Hour).UnixNano(), 10), ""},
		{" 90s ", strconv.FormatInt(now.Add(-90*time.Second).UnixNano(), 10), ""},
		{"-1h", "", "want an RFC 3339 time"},
		{"yesterday", "", "want an RFC 3339 time"},
		{"2025-01-02", "", "want an RFC 3339 time"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseTimeFlag("since", tt.in, now)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestFieldList(t *testing.T) {
	d := tier1.Telemetry()
	var fields []client.Tier1Field
	for _, f := range d.Fields {
		fields = append(fields, client.Tier1Field{Name: f.Name, Type: string(f.Type), Unit: f.Unit, Optional: f.Optional})
	}
	got, want := fieldList(fields), "device_id:str seq:uint ts:int[ns] metric:str value:float unit:str?"
	if got != want {
		t.Errorf("fieldList = %q, want %q", got, want)
	}
}

func TestLiveText(t *testing.T) {
	got := liveText(12345.4, 1234000, 0, 3100*time.Microsecond)
	if want := "12,345 frames/s  1,234,000 acked  0 refused  p50 ack 3.1 ms"; got != want {
		t.Errorf("liveText = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{{420 * time.Microsecond, "0.42 ms"}, {12 * time.Millisecond, "12.0 ms"}, {123456 * time.Microsecond, "123 ms"}} {
		if got := millis(tt.d); got != tt.want {
			t.Errorf("millis(%s) = %q, want %q", tt.d, got, tt.want)
		}
	}
}
