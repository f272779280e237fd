package engine_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// A code added to the engine without a test case fails here: every code a
// turn can end with (TurnError and FailedEvent, the terminal error and
// failed events) needs a case in endCases, and every refusal (an apperr
// error the package returns) one in refusalCases. A case whose code the
// source no longer has fails too.
func TestEndCodes_EveryCodeHasACase(t *testing.T) {
	ends, refusals := sourceCodes(t)
	if len(ends) < 10 || len(refusals) < 10 {
		t.Fatalf("the scan found %d end codes and %d refusals: it no longer reads the source right", len(ends), len(refusals))
	}
	t.Logf("end codes: %v", sortedKeys(ends))
	t.Logf("refusals: %v", sortedKeys(refusals))
	endTested := map[string]bool{}
	for _, c := range endCases {
		endTested[c.code] = true
	}
	refusalTested := map[string]bool{}
	for _, c := range refusalCases {
		refusalTested[c.code] = true
	}
	compare(t, "end code", "endCases", ends, endTested)
	compare(t, "refusal", "refusalCases", refusals, refusalTested)
}

func compare(t *testing.T, what, table string, inSource map[string]string, tested map[string]bool) {
	t.Helper()
	for _, code := range sortedKeys(inSource) {
		if !tested[code] {
			t.Errorf("%s: %s %q has no case in %s", inSource[code], what, code, table)
		}
	}
	for code := range tested {
		if _, ok := inSource[code]; !ok {
			t.Errorf("%s has a case for %s %q, which the source no longer has", table, what, code)
		}
	}
}

var codeRE = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// sourceCodes reads the source of the domain and of every package under it
// (tests aside) and returns the end
// codes and the refusal codes in it, each with where it is. A code the scan
// cannot read (a variable, say) fails the test: it must be a literal or a
// constant, or pass on the Code of another error.
func sourceCodes(t *testing.T) (ends, refusals map[string]string) {
	t.Helper()
	// The domain (the parent directory) and every package under it.
	var files []string
	for _, pattern := range []string{"../*.go", "../*/*.go"} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, found...)
	}
	fset := token.NewFileSet()
	var parsed []*ast.File
	consts := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		parsed = append(parsed, f)
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, id := range vs.Names {
						if i < len(vs.Values) {
							if s, ok := stringLit(vs.Values[i]); ok {
								consts[id.Name] = s
							}
						}
					}
				}
			}
		}
	}
	code := func(x ast.Expr) (string, bool) {
		if s, ok := stringLit(x); ok {
			return s, codeRE.MatchString(s)
		}
		if id, ok := x.(*ast.Ident); ok {
			s, ok := consts[id.Name]
			return s, ok && codeRE.MatchString(s)
		}
		if sel, ok := x.(*ast.SelectorExpr); ok { // a qualified constant: conversation.CodeStorageFailed
			s, ok := consts[sel.Sel.Name]
			return s, ok && codeRE.MatchString(s)
		}
		return "", false
	}
	// The argument that is the code, by apperr constructor (and Fields.Err).
	codeArg := map[string]int{"New": 1, "Invalidf": 0, "NotFoundf": 0, "Wrap": 2}
	ends, refusals = map[string]string{}, map[string]string{}
	for _, f := range parsed {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CompositeLit:
				typ, ok := n.Type.(*ast.Ident)
				if sel, isSel := n.Type.(*ast.SelectorExpr); isSel { // conversation.TurnError
					typ, ok = sel.Sel, true
				}
				if !ok || (typ.Name != "TurnError" && typ.Name != "ErrorEvent" && typ.Name != "FailedEvent") {
					return true
				}
				pos := fset.Position(n.Pos()).String()
				found := false
				for _, el := range n.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						t.Errorf("%s: a %s without field names: name them, so this test finds its code", pos, typ.Name)
						continue
					}
					if k, _ := kv.Key.(*ast.Ident); k == nil || k.Name != "Code" {
						continue
					}
					found = true
					if sel, ok := kv.Value.(*ast.SelectorExpr); ok && sel.Sel.Name == "Code" {
						continue // passes on the code of a TurnError built elsewhere
					}
					if c, ok := code(kv.Value); ok {
						ends[c] = pos
					} else {
						t.Errorf("%s: the code of a %s is not a literal or constant: this test cannot see it", pos, typ.Name)
					}
				}
				if !found {
					t.Errorf("%s: a %s without a Code", pos, typ.Name)
				}
			case *ast.CallExpr:
				sel, ok := n.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				i, isCtor := codeArg[sel.Sel.Name]
				if pkg, _ := sel.X.(*ast.Ident); !isCtor || pkg == nil || pkg.Name != "apperr" {
					if sel.Sel.Name != "Err" || len(n.Args) != 2 { // apperr.Fields.Err(code, message)
						return true
					}
					i = 0
				}
				pos := fset.Position(n.Pos()).String()
				if i >= len(n.Args) {
					t.Errorf("%s: apperr.%s with too few arguments", pos, sel.Sel.Name)
				} else if c, ok := code(n.Args[i]); ok {
					refusals[c] = pos
				} else {
					t.Errorf("%s: the code of an apperr.%s is not a literal or constant: this test cannot see it", pos, sel.Sel.Name)
				}
			}
			return true
		})
	}
	return ends, refusals
}

func stringLit(x ast.Expr) (string, bool) {
	lit, ok := x.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
