package config

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The manual lives in docs/ (the README is its front door). These tests keep
// it honest: every environment variable the code reads is in
// docs/configuration.md, and every relative link in README.md and docs/*.md
// reaches an existing file and, with a #fragment, an existing heading.

const repoRoot = "../.."

// envScanDirs are the packages whose environment reads are configuration:
// this package (the API server's settings) and every command.
var envScanDirs = []string{"internal/config", "cmd"}

// envNotConfig are variables the commands read that are not Toolgate's to
// document: cmd/bench hands PATH and HOME unchanged to the toolgate process
// it measures.
var envNotConfig = map[string]bool{"PATH": true, "HOME": true}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$|^[A-Z][A-Z0-9]+$`)

func TestDocs_ConfigurationListsEveryVariable(t *testing.T) {
	vars := envVarsRead(t)
	if len(vars) < 60 {
		t.Fatalf("found only %d environment variables in %v: the scanner no longer sees how the code reads them", len(vars), envScanDirs)
	}
	t.Logf("%d environment variables read in %v", len(vars), envScanDirs)
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs/configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(string(raw), -1) {
		documented[m[1]] = true
	}
	var missing []string
	for _, v := range vars {
		if !documented[v.name] && !envNotConfig[v.name] {
			missing = append(missing, v.name+" (read in "+v.where+")")
		}
	}
	for _, m := range missing {
		t.Errorf("docs/configuration.md does not name the environment variable %s: add it (in backquotes) with its default and meaning", m)
	}
}

type envVar struct{ name, where string }

// envVarsRead finds every environment variable the code in envScanDirs
// reads: the string literals (or constants holding them) that reach a
// lookup as its key. A lookup is os.Getenv or os.LookupEnv, a call of a
// function value named getenv or get (config.Load's getenv and the get
// helper it hands to every load function), and, found by following them,
// every function or closure that passes one of its own parameters to a
// lookup as the key (duration, upstreamCount, the size closure, …).
func envVarsRead(t *testing.T) []envVar {
	t.Helper()
	seen := map[string]string{}
	for _, dir := range envScanDirs {
		pkgDirs := map[string][]string{}
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				pkgDirs[filepath.Dir(p)] = append(pkgDirs[filepath.Dir(p)], p)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for pdir, files := range pkgDirs {
			fset := token.NewFileSet()
			var parsed []*ast.File
			for _, f := range files {
				af, err := parser.ParseFile(fset, f, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				parsed = append(parsed, af)
			}
			rel, _ := filepath.Rel(repoRoot, pdir)
			for name := range envKeysInPackage(parsed) {
				if _, ok := seen[name]; !ok {
					seen[name] = rel
				}
			}
		}
	}
	out := make([]envVar, 0, len(seen))
	for n, w := range seen {
		out = append(out, envVar{n, w})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// envKeysInPackage returns the keys one package's files look up.
func envKeysInPackage(files []*ast.File) map[string]bool {
	// String constants by name: the package's, and each function's own
	// (two functions may both declare a local ageKey).
	consts := map[string]string{}
	addConsts := func(into map[string]string, n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			if vs, ok := n.(*ast.ValueSpec); ok {
				for i, id := range vs.Names {
					if i < len(vs.Values) {
						if s, ok := stringLit(vs.Values[i], nil); ok {
							into[id.Name] = s
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range files {
		for _, d := range f.Decls {
			if gd, ok := d.(*ast.GenDecl); ok {
				addConsts(consts, gd)
			}
		}
	}
	scopes := func(yield func(body ast.Node, consts map[string]string) bool) {
		for _, f := range files {
			for _, d := range f.Decls {
				local := consts
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					local = maps.Clone(consts)
					addConsts(local, fd.Body)
				}
				if !yield(d, local) {
					return
				}
			}
		}
	}
	// lookups: function name → index of its key argument.
	lookups := map[string]int{"getenv": 0, "get": 0, "os.Getenv": 0, "os.LookupEnv": 0}
	type fn struct {
		name   string
		params []string
		body   *ast.BlockStmt
	}
	var fns []fn
	paramNames := func(ft *ast.FuncType) []string {
		var ps []string
		for _, fld := range ft.Params.List {
			if len(fld.Names) == 0 {
				ps = append(ps, "_")
			}
			for _, n := range fld.Names {
				ps = append(ps, n.Name)
			}
		}
		return ps
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				if n.Body != nil && n.Recv == nil {
					fns = append(fns, fn{n.Name.Name, paramNames(n.Type), n.Body})
				}
			case *ast.AssignStmt: // size := func(key string, …) { … get(key, …) … }
				for i, rhs := range n.Rhs {
					if lit, ok := rhs.(*ast.FuncLit); ok && i < len(n.Lhs) {
						if id, ok := n.Lhs[i].(*ast.Ident); ok {
							fns = append(fns, fn{id.Name, paramNames(lit.Type), lit.Body})
						}
					}
				}
			}
			return true
		})
	}
	// Follow helpers to a fixed point: a function whose parameter p reaches
	// a lookup's key position is itself a lookup at p's index.
	for changed := true; changed; {
		changed = false
		for _, f := range fns {
			if _, ok := lookups[f.name]; ok {
				continue
			}
			ast.Inspect(f.body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				idx, ok := lookups[calleeName(call)]
				if !ok || idx >= len(call.Args) {
					return true
				}
				if id, ok := call.Args[idx].(*ast.Ident); ok {
					for pi, p := range f.params {
						if p == id.Name {
							lookups[f.name] = pi
							changed = true
							return false
						}
					}
				}
				return true
			})
		}
	}
	keys := map[string]bool{}
	for d, consts := range scopes {
		ast.Inspect(d, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			idx, ok := lookups[calleeName(call)]
			if !ok || idx >= len(call.Args) {
				return true
			}
			if s, ok := stringLit(call.Args[idx], consts); ok && envName.MatchString(s) {
				keys[s] = true
			}
			return true
		})
	}
	// A loop over a list of names read one by one:
	//   for _, k := range []string{"DEBUG_ADDR", "METRICS_TOKEN"} { os.Getenv(k) }
	for d, consts := range scopes {
		ast.Inspect(d, func(n ast.Node) bool {
			rs, ok := n.(*ast.RangeStmt)
			if !ok {
				return true
			}
			v, ok := rs.Value.(*ast.Ident)
			lit, isLit := rs.X.(*ast.CompositeLit)
			if !ok || !isLit {
				return true
			}
			reads := false
			ast.Inspect(rs.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if idx, ok := lookups[calleeName(call)]; ok && idx < len(call.Args) {
						if id, ok := call.Args[idx].(*ast.Ident); ok && id.Name == v.Name {
							reads = true
						}
					}
				}
				return true
			})
			if reads {
				for _, e := range lit.Elts {
					if s, ok := stringLit(e, consts); ok && envName.MatchString(s) {
						keys[s] = true
					}
				}
			}
			return true
		})
	}
	return keys
}

func calleeName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok {
			return x.Name + "." + f.Sel.Name
		}
	}
	return ""
}

func stringLit(e ast.Expr, consts map[string]string) (string, bool) {
	switch e := e.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		}
	case *ast.Ident:
		s, ok := consts[e.Name]
		return s, ok
	}
	return "", false
}

func TestDocs_RelativeLinksResolve(t *testing.T) {
	files := []string{filepath.Join(repoRoot, "README.md"), filepath.Join(repoRoot, "db", "migrations", "README.md")}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	anchors := map[string]map[string]bool{}
	headingsOf := func(path string) map[string]bool {
		clean := filepath.Clean(path)
		if a, ok := anchors[clean]; ok {
			return a
		}
		a := markdownAnchors(t, clean)
		anchors[clean] = a
		return a
	}
	checked := 0
	for _, file := range files {
		for _, l := range markdownLinks(t, file) {
			target := l.target
			if urlScheme.MatchString(target) {
				continue // https:, mailto:: not this test's to check
			}
			checked++
			path, frag, _ := strings.Cut(target, "#")
			dest := file
			if path != "" {
				dest = filepath.Join(filepath.Dir(file), path)
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: the link %q points to %s, which does not exist", rel(file), l.line, target, rel(dest))
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !headingsOf(dest)[frag] {
				t.Errorf("%s:%d: the link %q points to #%s, which is no heading of %s", rel(file), l.line, target, frag, rel(dest))
			}
		}
	}
	if checked < 50 {
		t.Fatalf("checked only %d relative links: the link scanner is broken", checked)
	}
}

func rel(p string) string {
	r, err := filepath.Rel(repoRoot, p)
	if err != nil {
		return p
	}
	return r
}

type mdLink struct {
	target string
	line   int
}

var (
	fenceLine   = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan    = regexp.MustCompile("`[^`]*`")
	inlineLink  = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	headingRe   = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	htmlAnchor  = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	urlScheme   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	headingLink = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// markdownLinks lists the inline links of a Markdown file outside code
// blocks and code spans.
func markdownLinks(t *testing.T, path string) []mdLink {
	t.Helper()
	var out []mdLink
	eachProseLine(t, path, func(n int, line string) {
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			out = append(out, mdLink{m[1], n})
		}
	})
	return out
}

// markdownAnchors lists the anchors GitHub gives a file's headings (and
// any <a name> or <a id>).
func markdownAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	count := map[string]int{}
	eachProseLine(t, path, func(_ int, line string) {
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(line)
		if m == nil {
			return
		}
		s := githubSlug(m[2])
		if n := count[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		count[s]++
	})
	return out
}

func eachProseLine(t *testing.T, path string, fn func(n int, line string)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inFence := false
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if fenceLine.MatchString(line) {
			inFence = !inFence
			continue
		}
		if !inFence {
			fn(n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// githubSlug is the anchor GitHub gives a heading: its text (a link's
// text, not its address) in lower case, every character that is not a
// letter, digit, '_', '-' or space dropped, spaces turned into '-'.
func githubSlug(heading string) string {
	heading = headingLink.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestDocs_GitHubSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"The MCP face (`/mcp/{server_label}`)":           "the-mcp-face-mcpserver_label",
		"Routes to MCP servers: gateway or direct":       "routes-to-mcp-servers-gateway-or-direct",
		"Stop: deny the rest and give the model no turn": "stop-deny-the-rest-and-give-the-model-no-turn",
		"`item.done`": "itemdone",
		"Settings changes (`GET /api/settings/events`)":        "settings-changes-get-apisettingsevents",
		"Following a conversation: live, resume, and replicas": "following-a-conversation-live-resume-and-replicas",
	} {
		if got := githubSlug(heading); got != want {
			t.Errorf("githubSlug(%q) = %q, want %q", heading, got, want)
		}
	}
}
