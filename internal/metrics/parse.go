package metrics

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"
)

// Samples maps a sample's name with its labels, exactly as written
// (`podium_packets_received_total{kind="video"}`), to its value.
type Samples map[string]float64

// Sum adds every sample of a metric name, whatever its labels.
func (s Samples) Sum(name string) float64 {
	var total float64
	for k, v := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			total += v
		}
	}
	return total
}

// Has reports whether some sample of the metric name exists.
func (s Samples) Has(name string) bool {
	for k := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

// Parse reads an exposition and checks it the way a scraper would: every sample
// belongs to a family declared before it with HELP and TYPE, names and labels are
// well formed, values parse, and no sample appears twice.
func Parse(text string) (Samples, error) {
	out := Samples{}
	types := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		l := sc.Text()
		if l == "" {
			continue
		}
		if strings.HasPrefix(l, "# ") {
			f := strings.SplitN(l, " ", 4)
			if len(f) < 4 || (f[1] != "HELP" && f[1] != "TYPE") || !validName(f[2]) {
				return nil, fmt.Errorf("line %d: bad comment %q", line, l)
			}
			if f[1] == "TYPE" {
				if _, dup := types[f[2]]; dup {
					return nil, fmt.Errorf("line %d: family %s declared twice", line, f[2])
				}
				types[f[2]] = f[3]
			}
			continue
		}
		key, value, ok := cutLast(l, " ")
		if !ok {
			return nil, fmt.Errorf("line %d: no value in %q", line, l)
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: value %q: %v", line, value, err)
		}
		name, labels, _ := strings.Cut(key, "{")
		if !validName(name) {
			return nil, fmt.Errorf("line %d: bad name %q", line, name)
		}
		if labels != "" && (!strings.HasSuffix(labels, "}") || !validLabels(strings.TrimSuffix(labels, "}"))) {
			return nil, fmt.Errorf("line %d: bad labels in %q", line, key)
		}
		family := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base := strings.TrimSuffix(name, suffix); base != name && types[base] == Histogram {
				family = base
			}
		}
		if _, ok := types[family]; !ok {
			return nil, fmt.Errorf("line %d: sample %s before its family's TYPE", line, name)
		}
		if _, dup := out[key]; dup {
			return nil, fmt.Errorf("line %d: sample %s twice", line, key)
		}
		out[key] = v
	}
	return out, sc.Err()
}

func cutLast(s, sep string) (string, string, bool) {
	i := strings.LastIndex(s, sep)
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+len(sep):], true
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == ':' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// validLabels checks name="value" pairs separated by commas, values escaped.
func validLabels(s string) bool {
	for s != "" {
		name, rest, ok := strings.Cut(s, `="`)
		if !ok || !validName(name) {
			return false
		}
		i := 0
		for ; i < len(rest) && rest[i] != '"'; i++ {
			if rest[i] == '\\' {
				i++
			}
		}
		if i >= len(rest) {
			return false
		}
		s = rest[i+1:]
		if s != "" {
			if s[0] != ',' {
				return false
			}
			s = s[1:]
		}
	}
	return true
}
