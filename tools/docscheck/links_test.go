package docscheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// Every link between the docs, and from them to the repository's files,
// leads somewhere: the file exists and a #fragment names a heading or anchor.
func TestDocsLinksResolve(t *testing.T) {
	for _, p := range Links(docs(t), os.DirFS(root)) {
		t.Error(p)
	}
}

func TestSlugIsGitHubs(t *testing.T) {
	for _, c := range []struct{ heading, want string }{
		{"The data plane", "the-data-plane"},
		{"A finding: unbounded retransmissions, and the bound since", "a-finding-unbounded-retransmissions-and-the-bound-since"},
		{"Hand-written parsers vs the libraries", "hand-written-parsers-vs-the-libraries"},
		{"`bench forward` and `x_floor`", "bench-forward-and-x_floor"},
		{"Earlier: 25 November 2026", "earlier-25-november-2026"},
		{"See [the floor](#the-floor) first", "see-the-floor-first"},
		{"Über *fast* paths", "über-fast-paths"},
	} {
		if got := Slug(c.heading); got != c.want {
			t.Errorf("Slug(%q) = %q, want %q", c.heading, got, c.want)
		}
	}
}

// A broken link of each kind is reported, and nothing else.
func TestLinksFindsBrokenOnes(t *testing.T) {
	files := fstest.MapFS{
		"README.md":  {Data: []byte("# Podium\n")},
		"docs/a.md":  {Data: []byte("# A\n\n## Results\n\n## Results\n\n<a id=\"kept\"></a>\n\n```\n## not a heading\n```\n")},
		"tools/x.sh": {Data: []byte("#!/bin/sh\n")},
	}
	doc := Doc{Name: "docs/b.md", Text: strings.Join([]string{
		"[ok](a.md) [ok](a.md#results) [ok](a.md#results-1) [ok](a.md#kept) [ok](../README.md#podium)",
		"[ok](../tools/x.sh) [ok](https://example.com/nowhere.md) [ok](#local)",
		"`[code](gone.md)` and",
		"```",
		"[fenced](gone.md)",
		"```",
		"## Local",
		"[missing file](gone.md)",
		"[missing anchor](a.md#results-2)",
		"[fenced heading](a.md#not-a-heading)",
		"[missing here](#elsewhere)",
	}, "\n")}
	files["docs/b.md"] = &fstest.MapFile{Data: []byte(doc.Text)}
	got := Links([]Doc{doc}, files)
	want := []string{
		`docs/b.md:8: link to gone.md: no such file`,
		`docs/b.md:9: link to a.md#results-2: docs/a.md has no heading or anchor "results-2"`,
		`docs/b.md:10: link to a.md#not-a-heading: docs/a.md has no heading or anchor "not-a-heading"`,
		`docs/b.md:11: link to #elsewhere: docs/b.md has no heading or anchor "elsewhere"`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d problems, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i].String(), want[i]) {
			t.Errorf("problem %d: %s, want %s…", i, got[i], want[i])
		}
	}
}

// sources are the repository's code and scripts, whose comments point into
// the docs by section title.
func sources(t *testing.T) []Doc {
	t.Helper()
	var out []Doc
	err := fs.WalkDir(os.DirFS(root), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() && (e.Name() == "node_modules" || e.Name() == ".git" || e.Name() == "bin") {
			return fs.SkipDir
		}
		if e.IsDir() || !(strings.HasSuffix(p, ".go") || strings.HasSuffix(p, ".ts") || strings.HasSuffix(p, ".sh") || p == "Makefile") {
			return nil
		}
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return err
		}
		out = append(out, Doc{Name: p, Text: string(b)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every docs/<name>.md, "Section" a comment names is a heading or anchor there.
func TestCodeNamesSectionsThatExist(t *testing.T) {
	srcs := sources(t)
	if len(srcs) < 100 {
		t.Fatalf("found %d source files: the walk missed the tree", len(srcs))
	}
	for _, p := range SectionRefs(srcs, os.DirFS(root)) {
		t.Error(p)
	}
}

func TestSectionRefsFindsMissingOnes(t *testing.T) {
	files := fstest.MapFS{"docs/a.md": {Data: []byte("# A\n\n## Speaker, Last N and pins\n\n## Turning it on\n\n<a id=\"beyond-the-floor\"></a>\n")}}
	src := Doc{Name: "x.go", Text: "// as in docs/a.md, \"Speaker, Last N…\" and (docs/a.md,\n// \"Beyond the floor\"), but not docs/a.md \"Gone\" nor docs/b.md, \"A\"\n// nor docs/a.md, \"Turn\"\n"}
	got := SectionRefs([]Doc{src}, files)
	if len(got) != 3 || got[0].Line != 2 || !strings.Contains(got[0].Msg, `"Gone"`) || !strings.Contains(got[1].Msg, "docs/b.md: no such file") || !strings.Contains(got[2].Msg, `"Turn"`) {
		t.Fatalf("got %v, want the missing section, the missing file and a title that is only part of a word", got)
	}
}
