package metrics_test

import (
	"bytes"
	"testing"

	"github.com/synapse-edge/synapse/internal/metrics"
)

func TestPrometheusText(t *testing.T) {
	r := metrics.New()
	c := r.Counter("b_total", "A counter.")
	g := r.Gauge("a_gauge", "A gauge.")
	v := r.CounterVec("c_total", "By code.", "code")
	r.GaugeFunc("d_func", "Computed.", func() float64 { return 2.5 })
	c.Add(3)
	c.Inc()
	g.Set(7)
	g.Add(-2)
	v.With("200").Add(5)
	v.With(`we"ird`).Add(1)
	var buf bytes.Buffer
	r.Write(&buf)
	want := `# HELP a_gauge A gauge.
# TYPE a_gauge gauge
a_gauge 5
# HELP b_total A counter.
# TYPE b_total counter
b_total 4
# HELP c_total By code.
# TYPE c_total counter
c_total{code="200"} 5
c_total{code="we\"ird"} 1
# HELP d_func Computed.
# TYPE d_func gauge
d_func 2.5
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if c.Value() != 4 || g.Value() != 5 {
		t.Errorf("Value() = %d, %v", c.Value(), g.Value())
	}
}

func TestInfo(t *testing.T) {
	r := metrics.New()
	m := r.Info("e_info", "Text in a label.", "hash")
	var buf bytes.Buffer
	r.Write(&buf)
	if buf.Len() != 0 {
		t.Errorf("before Set: %q, want nothing", buf.String())
	}
	m.Set("ab12")
	m.Set(`c"d`)
	buf.Reset()
	r.Write(&buf)
	want := "# HELP e_info Text in a label.\n# TYPE e_info gauge\ne_info{hash=\"c\\\"d\"} 1\n"
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func BenchmarkCounterInc(b *testing.B) {
	c := metrics.New().Counter("x_total", "x")
	b.ReportAllocs()
	for b.Loop() {
		c.Inc()
	}
}
