package audit

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// importRule says which of the module's packages a part of the tree may
// import from its production (non-test) files. Packages are named relative
// to the module root; "x/..." is x and everything under it.
type importRule struct {
	pkg string
	// only, when set, is the whole list of the module's packages the part
	// may import (besides itself and its subpackages); never, the ones it
	// must not.
	only, never []string
	why         string
}

var importRules = []importRule{
	{pkg: "nomad/structs/...", only: []string{},
		why: "the model is imported by every part; whatever it imported, every part would"},
	{pkg: "scheduler", only: []string{"nomad/structs/..."},
		why: "the scheduler is pure: it reads a State snapshot and writes through a Planner, both defined in terms of the model"},
	{pkg: "nomad/state", only: []string{"nomad/structs/..."},
		why: "the state store holds the model; the server wires it, never the other way"},
	{pkg: "api/...", only: []string{},
		why: "the HTTP client stands alone, as upstream's api module does, so tools can use it without the agent"},
	// testutil itself stands up servers; its leaf packages (the fault
	// vocabulary, the waits) import nothing of the server, and the
	// client's fake server and the drivers' test support speak them.
	{pkg: "client/...", never: []string{"nomad", "nomad/state/...", "nomad/stream/...", "scheduler/...", "command/...", "testutil"},
		why: "the client runs where the servers do not and reaches them only over RPC"},
	{pkg: "drivers/...", never: []string{"nomad", "nomad/state/...", "nomad/stream/...", "scheduler/...", "command/...", "client/...", "testutil"},
		why: "drivers serve the client and know only the task they run"},
	{pkg: "helper/...", never: []string{"nomad", "nomad/state/...", "scheduler/...", "client/...", "drivers/...", "command/...", "api/...", "jobspec/..."},
		why: "helpers are small shared utilities without business logic"},
	{pkg: "testutil/fault", only: []string{"helper/pool"},
		why: "the fault vocabulary is spoken by the client's fake server; it must not bring the server along"},
	{pkg: "testutil/wait", only: []string{},
		why: "the waits serve every package's tests, the client's and the drivers' included"},
	{pkg: "jobspec/...", only: []string{"api/...", "helper/..."},
		why: "job files parse to the wire job, as upstream's jobspec package does; the server converts it"},
}

// matches reports whether rel (a package path relative to the module) is
// named by pattern.
func matches(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

// TestImportDirection checks the direction of every import between the
// module's packages against importRules: the layering (the model at the
// bottom, a pure scheduler, a client that never reaches into the server)
// is what keeps each part testable alone, and an import that crosses it
// compiles without complaint. Test files are exempt: tests may stand up
// whatever they need.
func TestImportDirection(t *testing.T) {
	root := moduleRoot(t)
	mod := modulePath(t, root)
	imports := map[string]map[string]bool{} // every package → the module's packages it imports
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if imports[rel] == nil {
			imports[rel] = map[string]bool{}
		}
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			own, ok := strings.CutPrefix(imp, mod+"/")
			if !ok {
				continue
			}
			imports[rel][own] = true
		}
		return nil
	})
	must.NoError(t, err)
	must.MapNotEmpty(t, imports, must.Sprint("no packages found"))

	var bad []string
	for _, r := range importRules {
		seen := false
		for pkg, imps := range imports {
			if !matches(r.pkg, pkg) {
				continue
			}
			seen = true
			base := strings.TrimSuffix(r.pkg, "/...")
			for imp := range imps {
				if imp == base || strings.HasPrefix(imp, base+"/") {
					continue // itself and its subpackages
				}
				allowed := !slices.ContainsFunc(r.never, func(p string) bool { return matches(p, imp) })
				if r.only != nil {
					allowed = slices.ContainsFunc(r.only, func(p string) bool { return matches(p, imp) })
				}
				if !allowed {
					bad = append(bad, fmt.Sprintf("%s imports %s: %s", pkg, imp, r.why))
				}
			}
		}
		// A rule about a package that is gone guards nothing.
		must.True(t, seen, must.Sprintf("rule for %s matches no package", r.pkg))
	}
	slices.Sort(bad)
	must.SliceEmpty(t, bad, must.Sprintf("imports against the layering:\n%s", strings.Join(bad, "\n")))
}

// TestImportRules_Match checks the pattern matching the rules rely on, so
// that a rule cannot pass by matching nothing.
func TestImportRules_Match(t *testing.T) {
	must.True(t, matches("nomad/structs/...", "nomad/structs"))
	must.True(t, matches("nomad/structs/...", "nomad/structs/x"))
	must.False(t, matches("nomad/structs/...", "nomad/structsx"))
	must.True(t, matches("nomad", "nomad"))
	must.False(t, matches("nomad", "nomad/structs"))
}
