// Package metrics is a minimal Prometheus text-format registry: counters and
// gauges, optionally with one label, and gauges computed when scraped. It has
// no dependencies, keeps no global state, and allocates nothing on the hot
// path (Add and Set are atomic operations).
package metrics

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// Registry holds metrics and writes them in the Prometheus text format.
type Registry struct {
	mu      sync.Mutex
	metrics []metric
}

type metric interface {
	name() string
	write(w io.Writer)
}

// New returns an empty registry.
func New() *Registry { return &Registry{} }

func (r *Registry) add(m metric) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.metrics = append(r.metrics, m)
}

// Write writes every metric, sorted by name.
func (r *Registry) Write(w io.Writer) {
	r.mu.Lock()
	ms := append([]metric(nil), r.metrics...)
	r.mu.Unlock()
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].name() < ms[j].name() })
	for _, m := range ms {
		m.write(w)
	}
}

// Counter is a monotonically increasing value.
type Counter struct {
	n, help string
	v       atomic.Uint64
}

// Counter registers a counter.
func (r *Registry) Counter(name, help string) *Counter {
	c := &Counter{n: name, help: help}
	r.add(c)
	return c
}

// Add adds d.
func (c *Counter) Add(d uint64) { c.v.Add(d) }

// Inc adds one.
func (c *Counter) Inc() { c.v.Add(1) }

// Value is the current value.
func (c *Counter) Value() uint64 { return c.v.Load() }

func (c *Counter) name() string { return c.n }
func (c *Counter) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n%s %d\n", c.n, c.help, c.n, c.n, c.v.Load())
}

// Gauge is a value that goes up and down.
type Gauge struct {
	n, help string
	bits    atomic.Uint64
}

// Gauge registers a gauge.
func (r *Registry) Gauge(name, help string) *Gauge {
	g := &Gauge{n: name, help: help}
	r.add(g)
	return g
}

// Set sets the value.
func (g *Gauge) Set(v float64) { g.bits.Store(math.Float64bits(v)) }

// Add adds d (which may be negative).
func (g *Gauge) Add(d float64) {
	for {
		old := g.bits.Load()
		if g.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Value is the current value.
func (g *Gauge) Value() float64 { return math.Float64frombits(g.bits.Load()) }

func (g *Gauge) name() string { return g.n }
func (g *Gauge) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s %s\n", g.n, g.help, g.n, g.n, formatFloat(g.Value()))
}

// Func is a value computed when scraped.
type Func struct {
	n, help, typ string
	f            func() float64
}

// GaugeFunc registers a gauge whose value f computes at scrape time.
func (r *Registry) GaugeFunc(name, help string, f func() float64) {
	r.add(&Func{n: name, help: help, typ: "gauge", f: f})
}

// CounterFunc registers a counter whose value f computes at scrape time.
func (r *Registry) CounterFunc(name, help string, f func() float64) {
	r.add(&Func{n: name, help: help, typ: "counter", f: f})
}

func (m *Func) name() string { return m.n }
func (m *Func) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %s\n", m.n, m.help, m.n, m.typ, m.n, formatFloat(m.f()))
}

// CounterVec is a family of counters that differ in one label's value.
type CounterVec struct {
	n, help, label string
	mu             sync.RWMutex
	vals           map[string]*atomic.Uint64
}

// CounterVec registers a counter family with one label.
func (r *Registry) CounterVec(name, help, label string) *CounterVec {
	c := &CounterVec{n: name, help: help, label: label, vals: map[string]*atomic.Uint64{}}
	r.add(c)
	return c
}

// With returns the counter for one label value.
func (c *CounterVec) With(value string) *atomic.Uint64 {
	c.mu.RLock()
	v := c.vals[value]
	c.mu.RUnlock()
	if v != nil {
		return v
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v = c.vals[value]; v == nil {
		v = new(atomic.Uint64)
		c.vals[value] = v
	}
	return v
}

func (c *CounterVec) name() string { return c.n }
func (c *CounterVec) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s counter\n", c.n, c.help, c.n)
	c.mu.RLock()
	keys := make([]string, 0, len(c.vals))
	for k := range c.vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=\"%s\"} %d\n", c.n, c.label, escapeLabel(k), c.vals[k].Load())
	}
	c.mu.RUnlock()
}

func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func formatFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// RegisterRuntime adds the Go runtime's heap in use and goroutine count
// to r.
func RegisterRuntime(r *Registry) {
	r.GaugeFunc("synapse_go_heap_bytes", "Go heap in use.", func() float64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.HeapAlloc)
	})
	r.GaugeFunc("synapse_go_goroutines", "Goroutines.", func() float64 { return float64(runtime.NumGoroutine()) })
}

// Info is a gauge of value 1 whose one label carries a value that is text
// (a version, a hash): the Prometheus "info" pattern. It writes nothing
// until Set.
type Info struct {
	n, help, label string
	v              atomic.Pointer[string]
}

// Info registers an info metric with one label.
func (r *Registry) Info(name, help, label string) *Info {
	m := &Info{n: name, help: help, label: label}
	r.add(m)
	return m
}

// Set makes value the label's value.
func (m *Info) Set(value string) { m.v.Store(&value) }

func (m *Info) name() string { return m.n }
func (m *Info) write(w io.Writer) {
	v := m.v.Load()
	if v == nil {
		return
	}
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s gauge\n%s{%s=\"%s\"} 1\n", m.n, m.help, m.n, m.n, m.label, escapeLabel(*v))
}

// VecFunc is a family of values of one label computed at scrape time.
type VecFunc struct {
	n, help, typ, label string
	f                   func() map[string]float64
}

// GaugeVecFunc registers a gauge family whose values (label value →
// value) f computes at scrape time; CounterVecFunc a counter family.
func (r *Registry) GaugeVecFunc(name, help, label string, f func() map[string]float64) {
	r.add(&VecFunc{n: name, help: help, typ: "gauge", label: label, f: f})
}

// CounterVecFunc registers a counter family computed at scrape time.
func (r *Registry) CounterVecFunc(name, help, label string, f func() map[string]float64) {
	r.add(&VecFunc{n: name, help: help, typ: "counter", label: label, f: f})
}

func (m *VecFunc) name() string { return m.n }
func (m *VecFunc) write(w io.Writer) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", m.n, m.help, m.n, m.typ)
	vals := m.f()
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "%s{%s=\"%s\"} %s\n", m.n, m.label, escapeLabel(k), formatFloat(vals[k]))
	}
}
