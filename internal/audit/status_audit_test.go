package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/shoenig/test/must"
)

// auditDoc is the single source of truth the test reads: the audit tables
// of the status model page, relative to the module root.
const auditDoc = "website/content/docs/status-model.md"

const (
	structsPath = "github.com/nomad-edge/nomad/nomad/structs"
	apiPath     = "github.com/nomad-edge/nomad/api"
)

// watchedMethods are the methods that answer "is this allocation (or node)
// alive, terminal, waiting to reconnect?", by receiver type. Evaluation has
// a TerminalStatus too; it is not a status of a workload and is not watched,
// which is why the walk resolves types instead of matching names.
var watchedMethods = map[string][]string{
	structsPath + ".Allocation": {"ServerTerminalStatus", "ClientTerminalStatus", "TerminalStatus",
		"NeedsToReconnect", "UnknownSince", "DisconnectTimeout", "Expired"},
	structsPath + ".Node":   {"TerminalStatus", "Ready"},
	apiPath + ".Allocation": {"ServerTerminalStatus", "ClientTerminalStatus"},
}

// watchedFuncs are the package-level functions of the same kind.
var watchedFuncs = map[string][]string{
	structsPath: {"ClientTerminal"},
}

// watchedConsts are the status constants whose direct comparison (==, !=,
// a switch case) is an inline "is it terminal / unknown / gone?" check.
// Assignments are not checks and are not watched.
var watchedConsts = map[string][]string{
	structsPath: {"AllocClientStatusComplete", "AllocClientStatusFailed", "AllocClientStatusLost",
		"AllocClientStatusUnknown", "AllocDesiredStatusStop", "AllocDesiredStatusEvict",
		"NodeStatusInit", "NodeStatusReady", "NodeStatusDisconnected", "NodeStatusDown"},
	apiPath: {"AllocClientStatusComplete", "AllocClientStatusFailed", "AllocClientStatusLost",
		"AllocClientStatusUnknown", "AllocDesiredStatusStop", "AllocDesiredStatusEvict",
		"NodeStatusInit", "NodeStatusReady", "NodeStatusDisconnected", "NodeStatusDown"},
}

// TestStatusChecksAudit fails when a function of the module checks an
// allocation's or node's status and the audit in status-model.md does not
// list it (or lists it with other checks), or the audit lists a function
// that no longer checks any. Integrators read that audit to learn how
// `unknown` is treated everywhere; a caller missing from it is a decision
// nobody reviewed.
func TestStatusChecksAudit(t *testing.T) {
	root := moduleRoot(t)
	found := findStatusChecks(t, root)
	must.MapNotEmpty(t, found, must.Sprint("the walk found no status checks at all: it is broken"))

	doc, err := os.ReadFile(filepath.Join(root, auditDoc))
	must.NoError(t, err)
	listed, err := parseAuditTables(doc)
	must.NoError(t, err)

	if problems := diffAudit(found, listed); len(problems) > 0 {
		t.Fatalf("the audit in %s is out of date with the code.\n"+
			"Fix each line below (one row per function, in the table under the heading of its package),\n"+
			"and fill in what the function decides for `unknown` and why:\n\n%s",
			auditDoc, strings.Join(problems, "\n"))
	}
}

// TestFindChecks_ResolvesTypes checks the walk itself on a small package:
// calls inside closures and method values count for their enclosing
// function, Evaluation.TerminalStatus (same name, other type) and
// assignments of status constants do not.
func TestFindChecks_ResolvesTypes(t *testing.T) {
	root := moduleRoot(t)
	pkgs := listPackages(t, root)
	src := `package fake

import "github.com/nomad-edge/nomad/nomad/structs"

func closure(as []*structs.Allocation) int {
	n := 0
	each := func(a *structs.Allocation) {
		if !a.TerminalStatus() { n++ }
	}
	for _, a := range as { each(a) }
	return n
}

var methodValue = (*structs.Allocation).ClientTerminalStatus

func evalOnly(e *structs.Evaluation) bool { return e.TerminalStatus() }

func assignOnly(a *structs.Allocation) { a.ClientStatus = structs.AllocClientStatusLost }

type T struct{}

func (T) compare(a *structs.Allocation, n *structs.Node) bool {
	switch a.ClientStatus {
	case structs.AllocClientStatusUnknown:
		return n.TerminalStatus()
	}
	return structs.AllocClientStatusLost != a.ClientStatus
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, 0)
	must.NoError(t, err)
	got, err := checksOf(checkInput{fset: fset, files: []*ast.File{f}, path: "example/fake", label: "fake", exports: pkgs.exports})
	must.NoError(t, err)
	must.Eq(t, map[string][]string{
		"fake.closure":     {"Allocation.TerminalStatus"},
		"fake.methodValue": {"Allocation.ClientTerminalStatus"},
		"fake.T.compare":   {"AllocClientStatusLost", "AllocClientStatusUnknown", "Node.TerminalStatus"},
	}, got)
}

// TestFindChecks_FollowsWrappers checks that a short predicate making a
// check is itself a check for its callers, through a chain of wrappers and
// a method value, that a long function returning bool is not, and that a
// status field compared with a raw string (==, a switch case) is reported.
func TestFindChecks_FollowsWrappers(t *testing.T) {
	root := moduleRoot(t)
	pkgs := listPackages(t, root)
	src := `package fake

import "github.com/nomad-edge/nomad/nomad/structs"

func isLive(a *structs.Allocation) bool { return !a.TerminalStatus() }

type r struct{}

func (r) heard(a *structs.Allocation) bool { return isLive(a) && a.NodeID != "" }

func caller(a *structs.Allocation) int {
	if (r{}).heard(a) {
		return 1
	}
	return 0
}

func viaValue(as []*structs.Allocation) []*structs.Allocation {
	return filter(as, isLive)
}

func filter(as []*structs.Allocation, keep func(*structs.Allocation) bool) []*structs.Allocation { return nil }

func long(a *structs.Allocation) bool {
	n := 0
	n++
	n++
	return n > 1 && a.TerminalStatus()
}

func callsLong(a *structs.Allocation) bool { return long(a) }

func raw(a *structs.Allocation, n *structs.Node) bool {
	switch n.Status {
	case "ready":
	}
	return a.ClientStatus == "lost" || a.Name == "lost"
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, 0)
	must.NoError(t, err)
	tp, err := typeCheck(checkInput{fset: fset, files: []*ast.File{f}, path: "example/fake", label: "fake", exports: pkgs.exports})
	must.NoError(t, err)
	checks, raw := auditChecks([]*typedPackage{tp})
	must.Eq(t, map[string][]string{
		"fake.isLive":   {"Allocation.TerminalStatus"},
		"fake.r.heard":  {"fake.isLive"},
		"fake.caller":   {"fake.r.heard"},
		"fake.viaValue": {"fake.isLive"},
		"fake.long":     {"Allocation.TerminalStatus"},
	}, checks)
	must.Eq(t, map[string][]string{"fake.raw": {`"lost"`, `"ready"`}}, raw)
}

// TestParseAuditTables_Errors checks that a malformed audit is reported
// with its line, so the person fixing it knows where to look.
func TestParseAuditTables_Errors(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"row under the wrong package", "## Audit\n\n### `nomad`\n\n| caller | checks | unknown | why |\n|---|---|---|---|\n| `scheduler.f` | `Allocation.TerminalStatus` | x | y |\n",
			"line 7: scheduler.f belongs under the heading ### `scheduler`, not ### `nomad`"},
		{"listed twice", "## Audit\n\n### `nomad`\n\n| caller | checks | unknown | why |\n|---|---|---|---|\n| `nomad.f` | `Ready` | x | y |\n| `nomad.f` | `Ready` | x | y |\n",
			"line 8: nomad.f is listed twice"},
		{"no backquoted caller", "## Audit\n\n### `nomad`\n\n| caller | checks | unknown | why |\n|---|---|---|---|\n| nomad.f | `Ready` | x | y |\n",
			"line 7: the caller cell must hold one `package.function`"},
		{"no audit tables", "# Page\n\nnothing\n", "no audit table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseAuditTables([]byte(tc.doc))
			must.ErrorContains(t, err, tc.want)
		})
	}
}

// TestDiffAudit_Messages checks that each kind of drift names the function
// and says what to do, since the lead fixes the table from this message alone.
func TestDiffAudit_Messages(t *testing.T) {
	found := map[string][]string{
		"scheduler.newCaller": {"Allocation.TerminalStatus"},
		"nomad.changed":       {"AllocClientStatusUnknown", "Node.Ready"},
		"nomad.same":          {"Node.Ready"},
	}
	listed := map[string]auditRow{
		"nomad.changed": {line: 10, checks: []string{"Node.Ready"}},
		"nomad.same":    {line: 11, checks: []string{"Node.Ready"}},
		"nomad.gone":    {line: 12, checks: []string{"Node.Ready"}},
	}
	got := strings.Join(diffAudit(found, listed), "\n")
	must.StrContains(t, got, "ADD scheduler.newCaller under ### `scheduler`:\n    | `scheduler.newCaller` | `Allocation.TerminalStatus` |")
	must.StrContains(t, got, "REMOVE nomad.gone (line 12)")
	must.StrContains(t, got, "CHANGE the checks of nomad.changed (line 10) to: `AllocClientStatusUnknown`, `Node.Ready`")
	must.StrNotContains(t, got, "nomad.same")
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	must.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// listedPackage is the part of `go list -json` the walk needs.
type listedPackage struct {
	ImportPath string
	Dir        string
	Export     string
	GoFiles    []string
	Module     *struct{ Main bool }
	Error      *struct{ Err string }
}

type packageList struct {
	ours    []listedPackage
	exports map[string]string // import path → compiled export data
}

// listPackages asks the go command for the module's packages and the export
// data of everything they import, which is what go/types needs to resolve
// a method call to its receiver type without a new dependency
// (golang.org/x/tools/go/packages does the same underneath).
func listPackages(t *testing.T, root string) packageList {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps",
		"-json=ImportPath,Dir,Export,GoFiles,Module,Error", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	must.NoError(t, err, must.Sprintf("go list: %s", stderr.String()))

	list := packageList{exports: map[string]string{}}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		if p.Export != "" {
			list.exports[p.ImportPath] = p.Export
		}
		if p.Module != nil && p.Module.Main && len(p.GoFiles) > 0 {
			list.ours = append(list.ours, p)
		}
	}
	return list
}

// findStatusChecks type-checks every package of the module from its
// non-test files and returns, per function ("pkg.Func" or
// "pkg.Type.Method", pkg relative to the module), the watched checks it
// makes. Test files are left out on purpose: a test asserts a status, it
// does not decide what happens to a workload; test-support packages
// (clienttest, testutil, mock) are non-test files and are included, because
// a fake server that treats unknown differently misleads every test using it.
// Files excluded by build constraints on this platform are not seen.
func findStatusChecks(t *testing.T, root string) map[string][]string {
	t.Helper()
	checks, _ := walkModule(t, root)
	return checks
}

// walkModule is findStatusChecks, and also returns the raw status string
// comparisons it met, per function.
func walkModule(t *testing.T, root string) (checks, raw map[string][]string) {
	t.Helper()
	return auditChecks(typedModule(t, root))
}

// moduleCache holds typedModule's result: type-checking the whole module
// takes seconds, and every audit of the package walks the same code.
var moduleCache struct {
	sync.Mutex
	root string
	pkgs []*typedPackage
}

// typedModule parses and type-checks every package of the module from its
// non-test files, once per test binary.
func typedModule(t *testing.T, root string) []*typedPackage {
	t.Helper()
	moduleCache.Lock()
	defer moduleCache.Unlock()
	if moduleCache.root != root {
		moduleCache.pkgs, moduleCache.root = typeModule(t, root), root
	}
	return moduleCache.pkgs
}

func typeModule(t *testing.T, root string) []*typedPackage {
	t.Helper()
	pkgs := listPackages(t, root)
	modPath := modulePath(t, root)
	var walked []*typedPackage
	for _, p := range pkgs.ours {
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			must.NoError(t, err)
			files = append(files, f)
		}
		label := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modPath), "/")
		if label == "" {
			label = "(root)"
		}
		tp, err := typeCheck(checkInput{fset: fset, files: files, path: p.ImportPath, label: label, exports: pkgs.exports})
		must.NoError(t, err)
		walked = append(walked, tp)
	}
	return walked
}

func modulePath(t *testing.T, root string) string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "go.mod"))
	must.NoError(t, err)
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(s.Text()), "module "); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatal("go.mod has no module line")
	return ""
}

// checkInput is one package to type-check and walk.
type checkInput struct {
	fset    *token.FileSet
	files   []*ast.File
	path    string            // import path, for go/types
	label   string            // how callers are named: "scheduler", "nomad/state"
	exports map[string]string // import path → export data file
}

// checksOf type-checks one package and returns its callers and their checks.
func checksOf(in checkInput) (map[string][]string, error) {
	tp, err := typeCheck(in)
	if err != nil {
		return nil, err
	}
	checks, _ := auditChecks([]*typedPackage{tp})
	return checks, nil
}

// typedPackage is one package, parsed and type-checked.
type typedPackage struct {
	checkInput
	pkg  *types.Package
	info *types.Info
}

// typeCheck type-checks one package from its files.
func typeCheck(in checkInput) (*typedPackage, error) {
	info := &types.Info{
		Uses:       map[*ast.Ident]types.Object{},
		Defs:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	var typeErrs []error
	conf := types.Config{
		Importer: importer.ForCompiler(in.fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := in.exports[path]
			if !ok {
				return nil, fmt.Errorf("no export data for %q", path)
			}
			return os.Open(file)
		}),
		Error: func(err error) { typeErrs = append(typeErrs, err) },
	}
	pkg, _ := conf.Check(in.path, in.fset, in.files, info)
	if len(typeErrs) > 0 {
		return nil, fmt.Errorf("type-checking %s: %w", in.path, errors.Join(typeErrs...))
	}
	return &typedPackage{checkInput: in, pkg: pkg, info: info}, nil
}

// auditChecks returns, per function of pkgs, the watched checks it makes,
// and the raw status string comparisons it makes. It follows wrappers: a
// function or method of the module that returns one bool and makes a
// check (isLive, reconciler.heard) is a check itself, named by its audit
// name ("scheduler.isLive"), for every function that calls it, in any
// package; a predicate that only calls wrappers is a wrapper in turn. The
// walk repeats until no new wrapper is found.
func auditChecks(pkgs []*typedPackage) (checks, raw map[string][]string) {
	wrappers := map[string]string{} // funcKey → audit name
	for {
		checks, raw = map[string][]string{}, map[string][]string{}
		grew := false
		for _, p := range pkgs {
			for _, f := range p.files {
				for _, decl := range f.Decls {
					for name, node := range declNames(decl) {
						self := ""
						if fd, ok := node.(*ast.FuncDecl); ok {
							self = funcKey(p.info.Defs[fd.Name])
						}
						c, r := checksIn(node, p.info, wrappers, self)
						if len(r) > 0 {
							raw[p.label+"."+name] = r
						}
						if len(c) == 0 {
							continue
						}
						checks[p.label+"."+name] = c
						if fd, ok := node.(*ast.FuncDecl); ok && isWrapper(p.path, fd, p.info) {
							if _, known := wrappers[self]; !known && self != "" {
								wrappers[self] = p.label + "." + name
								grew = true
							}
						}
					}
				}
			}
		}
		if !grew {
			return checks, raw
		}
	}
}

// funcKey identifies a function or method across packages, whether its
// object came from source or from export data: "path.Func" or
// "path.Type.Method".
func funcKey(obj types.Object) string {
	fn, ok := obj.(*types.Func)
	if !ok || fn.Pkg() == nil {
		return ""
	}
	if recv := fn.Type().(*types.Signature).Recv(); recv != nil {
		if named := namedOf(recv.Type()); named != nil {
			return fn.Pkg().Path() + "." + named.Obj().Name() + "." + fn.Name()
		}
		return ""
	}
	return fn.Pkg().Path() + "." + fn.Name()
}

func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	named, _ := t.(*types.Named)
	return named
}

// maxWrapperStatements is how long a predicate may be and still count as
// a wrapper of the checks it makes: isLive and heard are one return
// statement; a function that decides more than "is it live?" is audited
// for itself and its callers are not.
const maxWrapperStatements = 3

// isWrapper reports whether fd is a short predicate (one bool result, at
// most maxWrapperStatements statements) outside structs and api, whose
// own predicates are the watched vocabulary already.
func isWrapper(path string, fd *ast.FuncDecl, info *types.Info) bool {
	if path == structsPath || path == apiPath || len(fd.Body.List) > maxWrapperStatements {
		return false
	}
	fn, ok := info.Defs[fd.Name].(*types.Func)
	if !ok {
		return false
	}
	res := fn.Type().(*types.Signature).Results()
	if res.Len() != 1 {
		return false
	}
	b, ok := res.At(0).Type().Underlying().(*types.Basic)
	return ok && b.Kind() == types.Bool
}

// declNames names the top-level declarations that can hold code: functions
// and methods ("Type.Method"), and package-level variables (whose
// initialisers may be closures).
func declNames(decl ast.Decl) map[string]ast.Node {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Body == nil {
			return nil
		}
		name := d.Name.Name
		if d.Recv != nil && len(d.Recv.List) == 1 {
			name = recvName(d.Recv.List[0].Type) + "." + name
		}
		return map[string]ast.Node{name: d}
	case *ast.GenDecl:
		out := map[string]ast.Node{}
		for _, spec := range d.Specs {
			if vs, ok := spec.(*ast.ValueSpec); ok && len(vs.Values) > 0 {
				out[vs.Names[0].Name] = vs
			}
		}
		return out
	}
	return nil
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	}
	return "?"
}

// checksIn returns the sorted, distinct watched checks made inside node
// (calls of wrappers included, except of self), and the raw status
// strings it compares a status field with.
func checksIn(node ast.Node, info *types.Info, wrappers map[string]string, self string) (checks, raw []string) {
	compared := map[*ast.Ident]bool{}
	rawSeen := map[string]bool{}
	ast.Inspect(node, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BinaryExpr:
			if x.Op == token.EQL || x.Op == token.NEQ {
				markIdent(compared, x.X)
				markIdent(compared, x.Y)
				for _, pair := range [][2]ast.Expr{{x.X, x.Y}, {x.Y, x.X}} {
					if lit, ok := statusLiteral(pair[0]); ok && isStatusField(pair[1], info) {
						rawSeen[lit] = true
					}
				}
			}
		case *ast.CaseClause:
			for _, e := range x.List {
				markIdent(compared, e)
			}
		case *ast.SwitchStmt:
			if x.Tag != nil && isStatusField(x.Tag, info) {
				for _, st := range x.Body.List {
					for _, e := range st.(*ast.CaseClause).List {
						if lit, ok := statusLiteral(e); ok {
							rawSeen[lit] = true
						}
					}
				}
			}
		}
		return true
	})

	seen := map[string]bool{}
	ast.Inspect(node, func(n ast.Node) bool {
		id, ok := n.(*ast.Ident)
		if !ok {
			return true
		}
		obj := info.Uses[id]
		if name, ok := watchedName(obj, compared[id]); ok {
			seen[name] = true
		}
		if key := funcKey(obj); key != "" && key != self {
			if name, ok := wrappers[key]; ok {
				seen[name] = true
			}
		}
		return true
	})
	return sortedKeys(seen), sortedKeys(rawSeen)
}

// statusValues are the strings of the watched status constants.
var statusValues = []string{"complete", "failed", "lost", "unknown", "stop", "evict",
	"initializing", "ready", "disconnected", "down"}

// statusLiteral returns the quoted text of a string literal whose value is
// a status.
func statusLiteral(e ast.Expr) (string, bool) {
	lit, ok := ast.Unparen(e).(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v := strings.Trim(lit.Value, "`\"")
	if !slices.Contains(statusValues, v) {
		return "", false
	}
	return strconv.Quote(v), true
}

// isStatusField reports whether e reads the ClientStatus, DesiredStatus or
// Status field of an allocation or node type of structs or api.
func isStatusField(e ast.Expr, info *types.Info) bool {
	sel, ok := ast.Unparen(e).(*ast.SelectorExpr)
	if !ok {
		return false
	}
	s := info.Selections[sel]
	if s == nil || s.Kind() != types.FieldVal {
		return false
	}
	switch s.Obj().Name() {
	case "ClientStatus", "DesiredStatus", "Status":
	default:
		return false
	}
	named := namedOf(s.Recv())
	if named == nil || named.Obj().Pkg() == nil {
		return false
	}
	path, name := named.Obj().Pkg().Path(), named.Obj().Name()
	return (path == structsPath || path == apiPath) && (strings.HasPrefix(name, "Alloc") || strings.HasPrefix(name, "Node"))
}

func markIdent(set map[*ast.Ident]bool, e ast.Expr) {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		set[x] = true
	case *ast.SelectorExpr:
		set[x.Sel] = true
	}
}

// watchedName names a use of a watched object the way the audit table
// writes it: "Allocation.TerminalStatus", "ClientTerminal",
// "AllocClientStatusUnknown", and the api package's with an "api." prefix.
func watchedName(obj types.Object, inComparison bool) (string, bool) {
	if obj == nil || obj.Pkg() == nil {
		return "", false
	}
	prefix := ""
	if obj.Pkg().Path() == apiPath {
		prefix = "api."
	}
	switch o := obj.(type) {
	case *types.Func:
		recv := o.Type().(*types.Signature).Recv()
		if recv == nil {
			if slices.Contains(watchedFuncs[o.Pkg().Path()], o.Name()) {
				return prefix + o.Name(), true
			}
			return "", false
		}
		t := recv.Type()
		if p, ok := t.(*types.Pointer); ok {
			t = p.Elem()
		}
		named, ok := t.(*types.Named)
		if !ok {
			return "", false
		}
		key := named.Obj().Pkg().Path() + "." + named.Obj().Name()
		if slices.Contains(watchedMethods[key], o.Name()) {
			return prefix + named.Obj().Name() + "." + o.Name(), true
		}
	case *types.Const:
		if inComparison && slices.Contains(watchedConsts[o.Pkg().Path()], o.Name()) {
			return prefix + o.Name(), true
		}
	}
	return "", false
}

// auditRow is one caller row of the audit tables.
type auditRow struct {
	line   int      // 1-based line in the Markdown file
	pkg    string   // the package heading it sits under
	checks []string // sorted
}

// parseAuditTables reads every table whose first header cell is "caller".
// Each sits under a heading "### `pkg`" naming the package of its rows; each
// row's first cell is one `pkg.Function` and its second the backquoted
// checks it makes, comma-separated.
func parseAuditTables(doc []byte) (map[string]auditRow, error) {
	rows := map[string]auditRow{}
	var errs []error
	heading, inTable := "", false
	for i, line := range strings.Split(string(doc), "\n") {
		lineNo := i + 1
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "### "); ok {
			heading, inTable = strings.Trim(strings.TrimSpace(rest), "`"), false
			continue
		}
		if !strings.HasPrefix(line, "|") {
			inTable = false
			continue
		}
		cells := splitRow(line)
		if !inTable {
			inTable = len(cells) > 0 && strings.EqualFold(cells[0], "caller")
			continue
		}
		if len(cells) < 2 || strings.HasPrefix(cells[0], "---") || strings.HasPrefix(cells[0], ":-") {
			continue
		}
		caller, ok := backquoted(cells[0])
		if !ok || len(caller) != 1 {
			errs = append(errs, fmt.Errorf("line %d: the caller cell must hold one `package.function`, got %q", lineNo, cells[0]))
			continue
		}
		name := caller[0]
		if pkg := callerPackage(name); pkg != heading {
			errs = append(errs, fmt.Errorf("line %d: %s belongs under the heading ### `%s`, not ### `%s`", lineNo, name, pkg, heading))
		}
		if prev, dup := rows[name]; dup {
			errs = append(errs, fmt.Errorf("line %d: %s is listed twice (first at line %d)", lineNo, name, prev.line))
			continue
		}
		checks, _ := backquoted(cells[1])
		sort.Strings(checks)
		rows[name] = auditRow{line: lineNo, pkg: heading, checks: checks}
	}
	if len(errs) == 0 && len(rows) == 0 {
		errs = append(errs, errors.New("no audit table (a table whose first column is \"caller\") found"))
	}
	return rows, errors.Join(errs...)
}

// splitRow splits a Markdown table row into trimmed cells.
func splitRow(line string) []string {
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// backquoted returns the `code spans` of a cell.
func backquoted(cell string) ([]string, bool) {
	parts := strings.Split(cell, "`")
	if len(parts) < 3 || len(parts)%2 == 0 {
		return nil, false
	}
	var out []string
	for i := 1; i < len(parts); i += 2 {
		out = append(out, strings.TrimSpace(parts[i]))
	}
	return out, true
}

// callerPackage is the package part of "nomad/state.Type.Method": all up
// to the first dot after the last slash.
func callerPackage(name string) string {
	slash := strings.LastIndexByte(name, '/') + 1
	if dot := strings.IndexByte(name[slash:], '.'); dot >= 0 {
		return name[:slash+dot]
	}
	return name
}

// diffAudit lists, in a stable order, what to change in the tables so they
// match the code: rows to add (with the row to paste), to remove, and
// checks to correct.
func diffAudit(found map[string][]string, listed map[string]auditRow) []string {
	var out []string
	for _, name := range sortedKeys(found) {
		checks := found[name]
		row, ok := listed[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("ADD %s under ### `%s`:\n    | `%s` | %s | <what it decides for unknown> | <why> |",
				name, callerPackage(name), name, codeList(checks)))
		case !slices.Equal(row.checks, checks):
			out = append(out, fmt.Sprintf("CHANGE the checks of %s (line %d) to: %s (the table says %s); re-read its unknown decision",
				name, row.line, codeList(checks), codeList(row.checks)))
		}
	}
	for _, name := range sortedKeys(listed) {
		if _, ok := found[name]; !ok {
			out = append(out, fmt.Sprintf("REMOVE %s (line %d): no function of that name checks a status any more (renamed, moved or deleted?)",
				name, listed[name].line))
		}
	}
	return out
}

func codeList(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	return strings.Join(quoted, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestNoRawStatusComparisons fails on a comparison of an allocation's or
// node's status field with a string literal ("lost", "ready"): the audit
// follows the status constants, and a raw string is a check it cannot see
// and a grep for the constant misses.
func TestNoRawStatusComparisons(t *testing.T) {
	_, raw := walkModule(t, moduleRoot(t))
	var problems []string
	for _, name := range sortedKeys(raw) {
		problems = append(problems, fmt.Sprintf("%s compares a status with %s: use the constant of structs (or api)", name, strings.Join(raw[name], ", ")))
	}
	if len(problems) > 0 {
		t.Fatalf("raw status strings, invisible to the audit:\n%s", strings.Join(problems, "\n"))
	}
}
