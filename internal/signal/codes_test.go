package signal

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every Code* constant of the package is in Codes, once: a code added without
// it would be counted as "other" in podium_signaling_errors_total.
func TestCodesListsEveryCode(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, id := range vs.Names {
					if !strings.HasPrefix(id.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						declared = append(declared, v)
					}
				}
			}
		}
	}
	if len(declared) < 20 {
		t.Fatalf("found only %d Code constants: the scan is broken", len(declared))
	}
	for _, code := range declared {
		if n := strings.Count(","+strings.Join(Codes, ",")+",", ","+code+","); n != 1 {
			t.Errorf("error code %q is in Codes %d times, want once", code, n)
		}
	}
	for _, code := range Codes {
		if !slices.Contains(declared, code) {
			t.Errorf("Codes lists %q, which no Code constant declares", code)
		}
	}
}
