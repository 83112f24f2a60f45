package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const signalDir = "../../internal/signal"

var committedTS = filepath.Join("..", "..", OutputPath)

// TestGeneratedUpToDate fails when a Go message type changed and `make
// protocol` was not run: the committed TypeScript is not what it generates.
func TestGeneratedUpToDate(t *testing.T) {
	if err := CheckUpToDate(signalDir, committedTS); err != nil {
		t.Fatal(err)
	}
}

// TestChangedGoFieldIsDetected renames a field of a message type in a copy of
// internal/signal and checks that the file generated before the change is
// then reported out of date, the file named and the changed line shown.
func TestChangedGoFieldIsDetected(t *testing.T) {
	dir := t.TempDir()
	entries, err := os.ReadDir(signalDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".go") && !strings.HasSuffix(e.Name(), "_test.go") {
			copyFile(t, filepath.Join(signalDir, e.Name()), filepath.Join(dir, e.Name()))
		}
	}
	before := filepath.Join(t.TempDir(), "messages.ts")
	if err := run(dir, before, false); err != nil {
		t.Fatal(err)
	}
	if err := CheckUpToDate(dir, before); err != nil {
		t.Fatalf("fresh file reported out of date: %v", err)
	}

	src, err := os.ReadFile(filepath.Join(dir, "messages.go"))
	if err != nil {
		t.Fatal(err)
	}
	const field = "AudioMuted bool   `json:\"audioMuted\"`"
	if !strings.Contains(string(src), field) {
		t.Fatalf("messages.go has no %s to change any more: pick another field", field)
	}
	src = []byte(strings.Replace(string(src), field, "AudioMuted bool   `json:\"audioOff\"`", 1))
	if err := os.WriteFile(filepath.Join(dir, "messages.go"), src, 0o644); err != nil {
		t.Fatal(err)
	}

	err = CheckUpToDate(dir, before)
	if err == nil {
		t.Fatal("a renamed JSON field was not detected")
	}
	for _, want := range []string{before + " is out of date", "make protocol", "-   audioMuted: boolean;", "+   audioOff: boolean;"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("report lacks %q:\n%v", want, err)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTypeScriptOfGoTypes pins down the mapping rules on a small package.
func TestTypeScriptOfGoTypes(t *testing.T) {
	got := generateSource(t, `package p

import "encoding/json"

// Message types.
const (
	TypeHello = "hello" // client → server
	TypeBye   = "bye"
	typeSecret = "secret"
	limit = 4 << 10
)

// Limit is a bound.
const Limit = limit * 2

type Kind string

// Hello greets.
type Hello struct {
	Name    string            `+"`json:\"name\"`"+`
	Nick    *string           `+"`json:\"nick,omitempty\"`"+` // optional
	Peer    *Peer             `+"`json:\"peer\"`"+`
	Peers   []*Peer           `+"`json:\"peers\"`"+`
	ByID    map[string]Peer   `+"`json:\"byId\"`"+`
	TS      json.Number       `+"`json:\"ts\"`"+`
	Blob    []byte            `+"`json:\"blob\"`"+`
	Kind    Kind              `+"`json:\"kind\" tstype:\"'a' | 'b'\"`"+`
	Skip    int               `+"`json:\"-\"`"+`
	Any     any               `+"`json:\"any,omitzero\"`"+`
	Inline  struct {
		X int `+"`json:\"x\"`"+`
	} `+"`json:\"inline\"`"+`
	Peer2
	private int
}

type Peer struct {
	ID string `+"`json:\"id\"`"+`
}

type Peer2 struct {
	Role string `+"`json:\"role\"`"+`
}

// GoOnly has no json tags: not on the wire.
type GoOnly struct {
	Err error
}
`)
	for _, want := range []string{
		"/** Message types. */\nexport const TypeHello = \"hello\"; // client → server\nexport const TypeBye = \"bye\";\n",
		"/** Limit is a bound. */\nexport const Limit = 8192;\n",
		"export type Kind = string;\n",
		"/** Hello greets. */\nexport interface Hello extends Peer2 {\n  name: string;\n  /** optional */\n  nick?: string;\n  peer: Peer | null;\n  peers: (Peer | null)[];\n  byId: Record<string, Peer>;\n  ts: number;\n  blob: string;\n  kind: 'a' | 'b';\n  any?: unknown;\n  inline: {\n    x: number;\n  };\n}\n",
		"export type MessageType =\n  | typeof TypeHello\n  | typeof TypeBye;\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks\n%s\n--- output:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"secret", "GoOnly", "Err", "private", "Skip", "ErrorCode"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("output has %q:\n%s", unwanted, got)
		}
	}
}

// TestUnclearTypesAreErrors: protogen refuses what it cannot map rather than
// emitting `any`.
func TestUnclearTypesAreErrors(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"type M struct {\n\tA string `json:\"a\"`\n\tB string\n}", "field B has no json tag"},
		{"import \"time\"\ntype M struct {\n\tD time.Duration `json:\"d\"`\n}", "no TypeScript for type time.Duration"},
		{"type M struct {\n\tC chan int `json:\"c\"`\n}", "no TypeScript for type"},
		{"const TypeX = 1 << iota", "constant TypeX of the MessageType family is not a string"},
		{"const CodeX = 1", "constant CodeX of the ErrorCode family is not a string"},
		{"type ErrorCode string\nconst CodeX = \"x\"", "type ErrorCode collides"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte("package p\n"+c.src+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Generate(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err %v, want %q", c.src, err, c.want)
		}
	}
}

func generateSource(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(dir)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}
