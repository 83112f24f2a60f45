package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const protocolDoc = "../../docs/protocol.md"

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	parens     = regexp.MustCompile(`\([^)]*\)`)
)

// docNames reads docs/protocol.md: the message types its "###" headings name
// (backticked, outside parentheses: "### `offer` (pc = `publish`)" names
// offer), the codes of the table in the `error` section, and everything
// backticked in the `bye` section.
func docNames(t *testing.T) (headings, errorCodes, byeSection []string) {
	t.Helper()
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	section := ""
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(line, "#") {
			section = ""
		}
		if h, ok := strings.CutPrefix(line, "### "); ok {
			for _, m := range backticked.FindAllStringSubmatch(parens.ReplaceAllString(h, ""), -1) {
				headings = append(headings, m[1])
			}
			section = strings.TrimSpace(h)
			continue
		}
		switch section {
		case "`error`":
			if cells := strings.Split(line, "|"); len(cells) > 2 && strings.HasPrefix(line, "|") {
				for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
					errorCodes = append(errorCodes, m[1])
				}
			}
		case "`bye`":
			for _, m := range backticked.FindAllStringSubmatch(line, -1) {
				byeSection = append(byeSection, m[1])
			}
		}
	}
	return headings, errorCodes, byeSection
}

// TestProtocolDocMatchesGoTypes: every message type the server accepts or
// sends (the Type… constants of internal/signal) has a heading in
// docs/protocol.md, and every message type a heading names exists; the same
// for the error codes of the error table; every bye code is explained.
func TestProtocolDocMatchesGoTypes(t *testing.T) {
	p, err := Load(signalDir)
	if err != nil {
		t.Fatal(err)
	}
	headings, errorCodes, bye := docNames(t)
	_, types := p.Family("Type")
	_, codes := p.Family("Code")
	_, byeCodes := p.Family("Bye")
	if len(headings) < 10 || len(errorCodes) < 10 || len(bye) < 3 {
		t.Fatalf("docs/protocol.md not read as expected: %d headings, %d error codes, %d names in the bye section", len(headings), len(errorCodes), len(bye))
	}
	for _, c := range []struct {
		what       string
		code, docs []string
		both       bool
	}{
		{"message type (### heading)", types, headings, true},
		{"error code (row of the error table)", codes, errorCodes, true},
		{"bye code (in the bye section)", byeCodes, bye, false},
	} {
		for _, v := range c.code {
			if !slices.Contains(c.docs, v) {
				t.Errorf("internal/signal declares %s %q, docs/protocol.md does not describe it", c.what, v)
			}
		}
		if !c.both {
			continue
		}
		for _, v := range c.docs {
			if !slices.Contains(c.code, v) {
				t.Errorf("docs/protocol.md describes %s %q, internal/signal does not declare it", c.what, v)
			}
		}
	}
}
