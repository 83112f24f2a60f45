package main

import (
	"fmt"
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// Package is the parsed Go package: its files in name order and the values of
// its exported constants.
type Package struct {
	fset   *token.FileSet
	files  []*ast.File
	names  []string                  // file base names, as files
	consts map[string]constant.Value // exported and unexported, for expressions
	order  []string                  // exported constants in declaration order
	wire   map[string]bool           // exported type names emitted to TypeScript
}

// Load parses the non-test Go files of dir.
func Load(dir string) (*Package, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	p := &Package{fset: token.NewFileSet(), consts: map[string]constant.Value{}, wire: map[string]bool{}}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f, err := parser.ParseFile(p.fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		p.files = append(p.files, f)
		p.names = append(p.names, n)
	}
	if len(p.files) == 0 {
		return nil, fmt.Errorf("%s: no Go files", dir)
	}
	if err := p.evalConsts(); err != nil {
		return nil, err
	}
	for _, f := range p.files {
		for _, ts := range typeSpecs(f) {
			ok, err := p.isWire(ts)
			if err != nil {
				return nil, err
			}
			if ok {
				p.wire[ts.Name.Name] = true
			}
		}
	}
	return p, nil
}

// Const is an exported constant's value.
func (p *Package) Const(name string) (constant.Value, bool) {
	v, ok := p.consts[name]
	return v, ok && ast.IsExported(name)
}

// Family is the string values of the exported constants named prefix + an
// upper-case letter (TypeJoin, CodeBadMessage…), in declaration order.
func (p *Package) Family(prefix string) (names, values []string) {
	for _, n := range p.order {
		if !inFamily(n, prefix) {
			continue
		}
		names = append(names, n)
		values = append(values, constant.StringVal(p.consts[n]))
	}
	return names, values
}

func inFamily(name, prefix string) bool {
	return len(name) > len(prefix) && strings.HasPrefix(name, prefix) && name[len(prefix)] >= 'A' && name[len(prefix)] <= 'Z'
}

// evalConsts evaluates every constant that is an expression of literals and
// other constants; the others (iota, conversions, other packages) are left out.
// A member of a union family must be a string constant.
func (p *Package) evalConsts() error {
	for _, f := range p.files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if name.Name == "_" {
						continue
					}
					var v constant.Value
					if i < len(vs.Values) {
						v = p.eval(vs.Values[i])
					}
					for _, u := range unions {
						if inFamily(name.Name, u.prefix) && (v == nil || v.Kind() != constant.String) {
							return fmt.Errorf("%s: constant %s of the %s family is not a string constant", p.fset.Position(name.Pos()), name.Name, u.name)
						}
					}
					if v == nil {
						continue
					}
					p.consts[name.Name] = v
					if name.IsExported() {
						p.order = append(p.order, name.Name)
					}
				}
			}
		}
	}
	return nil
}

// eval is the value of a constant expression, nil when it is not one protogen
// understands.
func (p *Package) eval(e ast.Expr) constant.Value {
	switch e := e.(type) {
	case *ast.BasicLit:
		v := constant.MakeFromLiteral(e.Value, e.Kind, 0)
		if v.Kind() == constant.Unknown {
			return nil
		}
		return v
	case *ast.Ident:
		switch e.Name {
		case "true":
			return constant.MakeBool(true)
		case "false":
			return constant.MakeBool(false)
		}
		return p.consts[e.Name]
	case *ast.ParenExpr:
		return p.eval(e.X)
	case *ast.UnaryExpr:
		x := p.eval(e.X)
		if x == nil || (e.Op != token.SUB && e.Op != token.ADD && e.Op != token.NOT && e.Op != token.XOR) {
			return nil
		}
		return constant.UnaryOp(e.Op, x, 0)
	case *ast.BinaryExpr:
		x, y := p.eval(e.X), p.eval(e.Y)
		if x == nil || y == nil {
			return nil
		}
		switch e.Op {
		case token.SHL, token.SHR:
			s, ok := constant.Uint64Val(y)
			if !ok || x.Kind() != constant.Int {
				return nil
			}
			return constant.Shift(x, e.Op, uint(s))
		case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
			return constant.MakeBool(constant.Compare(x, e.Op, y))
		case token.QUO:
			if constant.Sign(y) == 0 {
				return nil
			}
			if x.Kind() == constant.Int && y.Kind() == constant.Int {
				return constant.BinaryOp(x, token.QUO_ASSIGN, y) // integer division
			}
		}
		if x.Kind() == constant.String && e.Op != token.ADD {
			return nil
		}
		v := constant.BinaryOp(x, e.Op, y)
		if v.Kind() == constant.Unknown {
			return nil
		}
		return v
	}
	return nil
}

// typeSpecs are the exported type declarations of f, with the doc comment of a
// lone declaration moved onto its spec.
func typeSpecs(f *ast.File) []*ast.TypeSpec {
	var out []*ast.TypeSpec
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			if !ts.Name.IsExported() || ts.TypeParams != nil {
				continue
			}
			if ts.Doc == nil && len(gd.Specs) == 1 {
				ts.Doc = gd.Doc
			}
			out = append(out, ts)
		}
	}
	return out
}

// isWire reports whether a type is part of the protocol: a struct whose
// exported fields all carry a json tag (or are embedded), or a named basic,
// slice or map type. A struct with some tagged and some untagged fields is an
// error: it is unclear which it is meant to be.
func (p *Package) isWire(ts *ast.TypeSpec) (bool, error) {
	switch t := ts.Type.(type) {
	case *ast.StructType:
		tagged, untagged := 0, ""
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				continue // embedded: flattened by encoding/json
			}
			exported := false
			for _, n := range f.Names {
				exported = exported || n.IsExported()
			}
			if !exported {
				continue
			}
			if _, ok := jsonTag(f); ok {
				tagged++
			} else if untagged == "" {
				untagged = f.Names[0].Name
			}
		}
		if tagged > 0 && untagged != "" {
			return false, fmt.Errorf("%s: struct %s: field %s has no json tag (tag every field of a wire type, none of a Go-only one)", p.fset.Position(ts.Pos()), ts.Name.Name, untagged)
		}
		return tagged > 0, nil
	case *ast.Ident, *ast.ArrayType, *ast.MapType, *ast.SelectorExpr:
		return true, nil
	}
	return false, nil
}

// jsonTag is a field's json struct tag.
func jsonTag(f *ast.Field) (string, bool) {
	return structTag(f).Lookup("json")
}

// tsTag is a field's tstype struct tag: its TypeScript type, overriding the
// one protogen would derive (tygo's convention, without its options).
func tsTag(f *ast.Field) string {
	return structTag(f).Get("tstype")
}

func structTag(f *ast.Field) reflect.StructTag {
	if f.Tag == nil {
		return ""
	}
	s, err := strconv.Unquote(f.Tag.Value)
	if err != nil {
		return ""
	}
	return reflect.StructTag(s)
}
