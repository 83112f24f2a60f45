package docscheck

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

var (
	// A Markdown link or image: [text](target) or [text](target "title").
	link = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	// A heading line, and an explicit anchor a doc sets with <a id="…">.
	heading  = regexp.MustCompile(`(?m)^#{1,6}[ \t]+(.+?)[ \t#]*$`)
	anchorID = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// Links reports every link in the docs to a file of the repository that does
// not exist, and every #fragment that names no heading or explicit anchor of
// the Markdown file it points at. files is the repository (paths relative to
// its root, as the docs' names are); links to other sites are not followed.
func Links(docs []Doc, files fs.FS) []Problem {
	anchorsOf := anchorsIn(files)
	var out []Problem
	for _, d := range docs {
		c := checker{doc: d}
		prose := withoutCode(d.Text)
		for _, m := range link.FindAllStringSubmatchIndex(prose, -1) {
			target := prose[m[2]:m[3]]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, fragment, _ := strings.Cut(target, "#")
			name := d.Name
			if file != "" {
				name = path.Clean(path.Join(path.Dir(d.Name), file))
			}
			if _, err := fs.Stat(files, name); err != nil {
				c.problem(m[2], "link to %s: no such file in the repository", target)
				continue
			}
			if fragment == "" || !strings.HasSuffix(name, ".md") {
				continue
			}
			if !anchorsOf(name)[fragment] {
				c.problem(m[2], "link to %s: %s has no heading or anchor %q", target, name, fragment)
			}
		}
		out = append(out, c.out...)
	}
	return out
}

// anchorsIn gives the anchors of a Markdown file of files (none for a file
// it cannot read), each file read once.
func anchorsIn(files fs.FS) func(name string) map[string]bool {
	cache := map[string]map[string]bool{}
	return func(name string) map[string]bool {
		if a, ok := cache[name]; ok {
			return a
		}
		b, err := fs.ReadFile(files, name)
		if err != nil {
			cache[name] = nil
			return nil
		}
		cache[name] = Anchors(string(b))
		return cache[name]
	}
}

// withoutCode blanks fenced blocks and inline code spans (same length, lines
// kept), so that what looks like a link inside code is not taken for one.
func withoutCode(text string) string {
	b := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	in, start := false, 0
	for _, f := range fence.FindAllStringIndex(text, -1) {
		if in {
			blank(start, f[1])
		} else {
			start = f[0]
		}
		in = !in
	}
	if in {
		blank(start, len(b))
	}
	for _, m := range span.FindAllIndex(b, -1) {
		blank(m[0], m[1])
	}
	return string(b)
}

// Anchors are the fragments a Markdown file answers to, as GitHub makes them:
// each heading's slug (a repeated one gets -1, -2, …) and each <a id="…">.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	in := false
	for _, line := range strings.Split(text, "\n") {
		if fence.MatchString(line) {
			in = !in
			continue
		}
		if in {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			s := Slug(m[1])
			if n := seen[s]; n > 0 {
				out[s+"-"+strconv.Itoa(n)] = true
			} else {
				out[s] = true
			}
			seen[s]++
		}
		for _, m := range anchorID.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// Slug is GitHub's anchor for a heading: the text of its links and code kept,
// lower case, spaces as hyphens, and every character but letters, digits,
// hyphens and underscores dropped.
func Slug(h string) string {
	h = linkText.ReplaceAllString(h, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

var (
	// A comment's continuation lines, joined so a reference may wrap.
	commentBreak = regexp.MustCompile(`\n[ \t]*(?://|#|\*)?[ \t]*`)
	// docs/<name>.md, "Section title" — how code comments point into the docs.
	sectionRef = regexp.MustCompile(`(docs/[A-Za-z0-9_-]+\.md),?[ \t]+"([^"\n]+)"`)
)

// SectionRefs reports every reference in a source file's comments of the form
// docs/<name>.md, "Section" whose doc does not exist or has no heading or anchor
// of that title (or beginning with it: "Beside competing TCP" names "Beside
// competing TCP (issue 22)").
func SectionRefs(sources []Doc, files fs.FS) []Problem {
	anchorsOf := anchorsIn(files)
	var out []Problem
	for _, src := range sources {
		joined, lines := joinComments(src.Text)
		for _, m := range sectionRef.FindAllStringSubmatchIndex(joined, -1) {
			doc, title := joined[m[2]:m[3]], joined[m[4]:m[5]]
			line := sort.SearchInts(lines, m[0]+1)
			if _, err := fs.Stat(files, doc); err != nil {
				out = append(out, Problem{src.Name, line, "names " + doc + ": no such file"})
				continue
			}
			if !hasSection(anchorsOf(doc), title) {
				out = append(out, Problem{src.Name, line, fmt.Sprintf("names %s, %q: no such heading or anchor", doc, title)})
			}
		}
	}
	return out
}

// joinComments joins each line to the next, dropping the comment marker that
// continues it, and gives the offset in the joined text where each original
// line begins.
func joinComments(text string) (string, []int) {
	var b strings.Builder
	lines := []int{0}
	last := 0
	for _, m := range commentBreak.FindAllStringIndex(text, -1) {
		b.WriteString(text[last:m[0]])
		b.WriteByte(' ')
		lines = append(lines, b.Len())
		last = m[1]
	}
	b.WriteString(text[last:])
	return b.String(), lines
}

// hasSection: the title is a heading's or anchor's, or its first words.
func hasSection(anchors map[string]bool, title string) bool {
	want := Slug(strings.TrimSpace(strings.TrimSuffix(title, "…")))
	for a := range anchors {
		if a == want || strings.HasPrefix(a, want+"-") {
			return true
		}
	}
	return false
}
