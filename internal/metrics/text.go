// Package metrics writes the Prometheus text exposition format (version 0.0.4)
// and holds the few metric types the server updates itself. Everything else is
// read from existing counters at scrape time, so the packet path does no work
// for metrics.
package metrics

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// ContentType is the exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Metric types.
const (
	Counter   = "counter"
	Gauge     = "gauge"
	Histogram = "histogram"
)

// Writer writes metric families; the first write error is kept and returned by Flush.
type Writer struct {
	w *bufio.Writer
}

// NewWriter writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Family starts a metric family: its HELP and TYPE lines. Samples follow.
func (w *Writer) Family(name, typ, help string) {
	w.str("# HELP ")
	w.str(name)
	w.str(" ")
	w.str(escapeHelp(help))
	w.str("\n# TYPE ")
	w.str(name)
	w.str(" ")
	w.str(typ)
	w.str("\n")
}

// Sample writes one sample; labels are name, value pairs.
func (w *Writer) Sample(name string, value float64, labels ...string) {
	w.str(name)
	if len(labels) >= 2 {
		w.str("{")
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.str(",")
			}
			w.str(labels[i])
			w.str(`="`)
			w.str(escapeLabel(labels[i+1]))
			w.str(`"`)
		}
		w.str("}")
	}
	w.str(" ")
	w.str(FormatValue(value))
	w.str("\n")
}

// One writes a family with a single unlabelled sample.
func (w *Writer) One(name, typ, help string, value float64) {
	w.Family(name, typ, help)
	w.Sample(name, value)
}

// Histogram writes the samples of one histogram (after Family): cumulative
// buckets, the +Inf bucket, sum and count.
func (w *Writer) Histogram(name string, s Snapshot, labels ...string) {
	var cum uint64
	for i, b := range s.Bounds {
		cum += s.Counts[i]
		w.Sample(name+"_bucket", float64(cum), append(labels[:len(labels):len(labels)], "le", FormatValue(b))...)
	}
	w.Sample(name+"_bucket", float64(s.Count), append(labels[:len(labels):len(labels)], "le", "+Inf")...)
	w.Sample(name+"_sum", s.Sum, labels...)
	w.Sample(name+"_count", float64(s.Count), labels...)
}

// Flush writes what is buffered and returns the first error.
func (w *Writer) Flush() error { return w.w.Flush() }

func (w *Writer) str(s string) { _, _ = w.w.WriteString(s) }

// FormatValue formats a sample value as the format wants it.
func FormatValue(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	case math.IsNaN(v):
		return "NaN"
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
var helpEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`)

func escapeLabel(s string) string { return labelEscaper.Replace(s) }
func escapeHelp(s string) string  { return helpEscaper.Replace(s) }
