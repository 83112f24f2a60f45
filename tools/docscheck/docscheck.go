// Package docscheck finds documentation that names what the code does not
// have: command-line flags, configuration defaults and environment variables,
// metric names and labels, signaling message types. `make docs-check` runs its
// test against README.md and docs/*.md; the facts come from the code itself
// (Facts in facts.go). Links (links.go) finds links to files or headings that
// are not there.
package docscheck

import (
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Facts is what the code declares.
type Facts struct {
	// Commands maps each podium command ("serve", "token", "load",
	// "bench forward", "bench lastn") to the flags it registers.
	Commands map[string]map[string]bool
	// Foreign are flags of other programs the docs may name (Chromium's, as
	// the e2e harness passes them).
	Foreign map[string]bool
	// Keys is the server's configuration, one entry per key.
	Keys []Key
	// Metrics maps each metric family a server exposes to its label names.
	Metrics map[string]map[string]bool
	// Messages are the signaling message types.
	Messages map[string]bool
}

// Key is one configuration key: flag name, environment variable, default.
type Key struct {
	Name, Env string
	Default   any // string, int, float64, bool, time.Duration or []string
}

// Doc is one Markdown file.
type Doc struct {
	Name, Text string
}

// Problem is one thing a doc names that the code does not have.
type Problem struct {
	Doc  string
	Line int
	Msg  string
}

func (p Problem) String() string { return fmt.Sprintf("%s:%d: %s", p.Doc, p.Line, p.Msg) }

// Check reports every flag, default, environment variable, metric and message
// type the docs name that the facts do not have. configTable names the doc
// holding the configuration table (README.md), which must also list every key.
func Check(docs []Doc, f Facts, configTable string) []Problem {
	var out []Problem
	for _, d := range docs {
		c := checker{doc: d, f: f}
		c.flags()
		c.metrics()
		c.messages()
		if d.Name == configTable {
			c.configTable()
		}
		out = append(out, c.out...)
	}
	return out
}

type checker struct {
	doc Doc
	f   Facts
	out []Problem
}

func (c *checker) problem(offset int, format string, args ...any) {
	line := 1 + strings.Count(c.doc.Text[:offset], "\n")
	c.out = append(c.out, Problem{c.doc.Name, line, fmt.Sprintf(format, args...)})
}

var (
	fence    = regexp.MustCompile("(?m)^[ \\t]*```")
	span     = regexp.MustCompile("`([^`]+)`")
	flagName = regexp.MustCompile(`(?:^|[\s"'(=\[/,])--([a-z][a-z0-9-]*)`)
	// A podium invocation, and make run's ARGS, which go to podium serve.
	invocation = regexp.MustCompile(`(?:^|[\s"'(=$])(?:\./)?(?:bin/)?podium[ \t]+(serve|load|token|bench[ \t]+forward|bench[ \t]+lastn)\b|\bARGS="`)
	// Programs whose flags are theirs, not podium's.
	otherProgram = regexp.MustCompile(`^\s*(?:[A-Z_]+=\S*\s+)*(?:go|npm|npx|node|curl|ffmpeg|git|ip|tc|bash|sh|openssl|chromium|make)\b`)
)

// segments splits the doc into the pieces flags are judged in: each line of a
// fenced block, each inline code span, and the prose between spans. fenced
// reports which kind a piece is.
func (c *checker) segments(each func(offset int, text string, fenced bool)) {
	text := c.doc.Text
	in, pos := false, 0
	bounds := append(fence.FindAllStringIndex(text, -1), []int{len(text), len(text)})
	for _, b := range bounds {
		part := text[pos:b[0]]
		if in {
			off := pos
			for _, line := range strings.SplitAfter(part, "\n") {
				each(off, line, true)
				off += len(line)
			}
		} else {
			last := 0
			for _, m := range span.FindAllStringSubmatchIndex(part, -1) {
				each(pos+last, part[last:m[0]], false)
				each(pos+m[2], part[m[2]:m[3]], false)
				last = m[1]
			}
			each(pos+last, part[last:], false)
		}
		// The fence line itself (```sh) holds no flags.
		if end := strings.IndexByte(text[b[1]:], '\n'); end >= 0 {
			pos = b[1] + end + 1
		} else {
			pos = len(text)
		}
		in = !in
	}
}

// flags checks every --flag: after a podium invocation against that command's
// flags, elsewhere against every podium command's and the foreign ones. Lines
// of code blocks that run another program, and spans that do, are theirs.
func (c *checker) flags() {
	c.segments(func(offset int, text string, fenced bool) {
		if m := invocation.FindStringSubmatchIndex(text); m != nil {
			cmd := "serve"
			if m[2] >= 0 {
				cmd = strings.Join(strings.Fields(text[m[2]:m[3]]), " ")
			}
			args := text[m[1]:]
			if end := strings.IndexAny(args, ")|;&#\""); end >= 0 {
				args = args[:end]
			}
			for _, name := range flagsIn(args) {
				if !c.f.Commands[cmd][name.name] {
					c.problem(offset+m[1]+name.at, "--%s is not a flag of podium %s (it has: %s)", name.name, cmd, keys(c.f.Commands[cmd]))
				}
			}
			return
		}
		if fenced || otherProgram.MatchString(text) {
			return
		}
		for _, name := range flagsIn(text) {
			if c.f.Foreign[name.name] {
				continue
			}
			known := false
			for _, flags := range c.f.Commands {
				known = known || flags[name.name]
			}
			if !known {
				c.problem(offset+name.at, "--%s is not a flag of any podium command", name.name)
			}
		}
	})
}

type mention struct {
	name string
	at   int
}

func flagsIn(text string) []mention {
	var out []mention
	for _, m := range flagName.FindAllStringSubmatchIndex(text, -1) {
		out = append(out, mention{text[m[2]:m[3]], m[2]})
	}
	return out
}

var metricName = regexp.MustCompile("`((?:podium|go|process)_[a-z0-9_]+)(?:\\{([a-z_,]*)\\})?`")

// metrics checks every backticked metric name, and the labels written after it.
func (c *checker) metrics() {
	for _, m := range metricName.FindAllStringSubmatchIndex(c.doc.Text, -1) {
		name := c.doc.Text[m[2]:m[3]]
		labels, ok := c.f.Metrics[name]
		if !ok {
			c.problem(m[2], "metric %s is not exposed by the server", name)
			continue
		}
		if m[4] < 0 {
			continue
		}
		for _, l := range strings.Split(c.doc.Text[m[4]:m[5]], ",") {
			if !labels[l] {
				c.problem(m[4], "metric %s has no label %q (it has: %s)", name, l, keys(labels))
			}
		}
	}
}

var messageName = regexp.MustCompile("`([a-z][a-z-]*)`\\s+messages?\\b")

// messages checks "`x` message": x must be a signaling message type, unless it
// is a configuration key counting messages ("`signaling-rate` messages per second").
func (c *checker) messages() {
	for _, m := range messageName.FindAllStringSubmatchIndex(c.doc.Text, -1) {
		name := c.doc.Text[m[2]:m[3]]
		if _, isKey := c.key(name); !c.f.Messages[name] && !isKey {
			c.problem(m[2], "%q is not a signaling message type", name)
		}
	}
}

// configTable checks the configuration table (header "| flag … | environment |
// default | …"): each row's flags, environment variables and default against
// the keys, and that every key has a row.
func (c *checker) configTable() {
	text := c.doc.Text
	start := strings.Index(text, "| flag")
	if start < 0 {
		c.problem(0, "no configuration table (a row starting \"| flag\")")
		return
	}
	seen := map[string]bool{}
	off := start
	for i, line := range strings.SplitAfter(text[start:], "\n") {
		at := off
		off += len(line)
		if i < 2 {
			continue // header and separator
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		if len(cells) < 4 {
			c.problem(at, "configuration row with %d cells, want flag | environment | default | meaning", len(cells))
			continue
		}
		flags, envs := backticked(cells[0]), backticked(cells[1])
		def := strings.TrimSpace(cells[2])
		if len(envs) != len(flags) {
			c.problem(at, "%d flags and %d environment variables in one row", len(flags), len(envs))
		}
		for j, fl := range flags {
			name := strings.TrimPrefix(fl, "--")
			k, ok := c.key(name)
			if !ok {
				c.problem(at, "--%s is in the configuration table but is no configuration key", name)
				continue
			}
			seen[name] = true
			if j < len(envs) && envs[j] != k.Env {
				c.problem(at, "--%s: environment variable %s, the code reads %s", name, envs[j], k.Env)
			}
			if !sameDefault(strings.Trim(def, "`"), k.Default) {
				c.problem(at, "--%s: default %s, the code's is %s", name, def, format(k.Default))
			}
		}
	}
	for _, k := range c.f.Keys {
		if !seen[k.Name] {
			c.problem(start, "configuration key %s (--%s, default %s) has no row in the table", k.Name, k.Name, format(k.Default))
		}
	}
}

func (c *checker) key(name string) (Key, bool) {
	for _, k := range c.f.Keys {
		if k.Name == name {
			return k, true
		}
	}
	return Key{}, false
}

func backticked(cell string) []string {
	var out []string
	for _, m := range span.FindAllStringSubmatch(cell, -1) {
		out = append(out, m[1])
	}
	return out
}

// sameDefault compares a documented default with the code's. "—" (none) and
// "all" (every address) stand for an empty value.
func sameDefault(doc string, v any) bool {
	switch doc {
	case "—", "all":
		return reflect.ValueOf(v).IsZero() || reflect.ValueOf(v).Kind() == reflect.Slice && reflect.ValueOf(v).Len() == 0
	}
	switch v := v.(type) {
	case time.Duration:
		d, err := time.ParseDuration(doc)
		return err == nil && d == v
	case int:
		n, err := strconv.Atoi(doc)
		return err == nil && n == v
	case float64:
		x, err := strconv.ParseFloat(doc, 64)
		return err == nil && x == v
	case bool:
		b, err := strconv.ParseBool(doc)
		return err == nil && b == v
	case []string:
		return slices.Equal(strings.Split(doc, ","), v)
	case string:
		return doc == v
	}
	return false
}

func format(v any) string {
	if reflect.ValueOf(v).IsZero() || reflect.ValueOf(v).Kind() == reflect.Slice && reflect.ValueOf(v).Len() == 0 {
		return "empty (write —)"
	}
	if s, ok := v.([]string); ok {
		return "`" + strings.Join(s, ",") + "`"
	}
	return fmt.Sprintf("`%v`", v)
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}
