package docscheck

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// docs are README.md and every docs/*.md.
func docs(t *testing.T) []Doc {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []Doc
	for _, name := range append([]string{filepath.Join(root, "README.md")}, names...) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, name)
		out = append(out, Doc{Name: rel, Text: string(b)})
	}
	return out
}

func codeFacts(t *testing.T) Facts {
	t.Helper()
	f, err := CodeFacts(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// Every flag, default, environment variable, metric and message type the
// docs name exists in the code, and every configuration key has its row.
func TestDocsMatchCode(t *testing.T) {
	f := codeFacts(t)
	t.Logf("code: %d commands, %d configuration keys, %d metric families, %d message types, %d Chromium flags",
		len(f.Commands), len(f.Keys), len(f.Metrics), len(f.Messages), len(f.Foreign))
	for _, p := range Check(docs(t), f, "README.md") {
		t.Error(p)
	}
}

// sample is a doc in the README's style for the drift cases outside the
// configuration table.
const sample = "Start it with `make run ARGS=\"--last-n 4\"`, or:\n\n" +
	"```sh\npodium token --room standup --identity bob --ttl 2h\n```\n\n" +
	"Without keys, give `--auth-keys`. A client sends a fresh token (`token` message).\n" +
	"Metrics: `podium_rooms`, `podium_tracks{kind}`.\n"

// Drift of each kind is caught: the checker is fed a doc with one line
// changed (the real README for the configuration table), and must report it.
func TestCheckFindsDrift(t *testing.T) {
	f := codeFacts(t)
	var readme Doc
	for _, d := range docs(t) {
		if d.Name == "README.md" {
			readme = d
		}
	}
	if problems := Check([]Doc{{Name: "sample.md", Text: sample}}, f, ""); len(problems) != 0 {
		t.Fatalf("the unchanged sample: %v", problems)
	}
	for _, c := range []struct {
		name, old, new, want string
	}{
		{"bogus flag in the table", "| `--last-n` |", "| `--last-m` |", "--last-m is in the configuration table but is no configuration key"},
		{"wrong default", "| `PODIUM_LAST_N` | `8` |", "| `PODIUM_LAST_N` | `9` |", "--last-n: default `9`, the code's is `8`"},
		{"wrong environment variable", "| `PODIUM_LAST_N` |", "| `PODIUM_LASTN` |", "environment variable PODIUM_LASTN, the code reads PODIUM_LAST_N"},
		{"undocumented key", "| `--last-n` | `PODIUM_LAST_N`", "| `--video-pausing` | `PODIUM_VIDEO_PAUSING`", "configuration key last-n (--last-n, default `8`) has no row"},
		{"bogus flag in a command", "ARGS=\"--last-n 4\"", "ARGS=\"--lastn 4\"", "--lastn is not a flag of podium serve"},
		{"bogus flag of another command", "--identity bob", "--ident bob", "--ident is not a flag of podium token"},
		{"bogus flag in prose", "give `--auth-keys`", "give `--auth-key`", "--auth-key is not a flag of any podium command"},
		{"bogus metric", "`podium_rooms`", "`podium_roomz`", "metric podium_roomz is not exposed"},
		{"bogus metric label", "`podium_tracks{kind}`", "`podium_tracks{type}`", `metric podium_tracks has no label "type"`},
		{"bogus message type", "(`token` message)", "(`tokens` message)", `"tokens" is not a signaling message type`},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc, table := Doc{Name: "sample.md", Text: sample}, ""
			if strings.HasPrefix(c.old, "| ") {
				doc, table = readme, readme.Name
			}
			if !strings.Contains(doc.Text, c.old) {
				t.Fatalf("%s no longer holds %q: pick another line to change", doc.Name, c.old)
			}
			doc.Text = strings.Replace(doc.Text, c.old, c.new, 1)
			problems := Check([]Doc{doc}, f, table)
			found := false
			for _, p := range problems {
				found = found || strings.Contains(p.Msg, c.want)
			}
			if !found {
				t.Errorf("%s with %q for %q: got %v, want %q", doc.Name, c.new, c.old, problems, c.want)
			}
		})
	}
}
