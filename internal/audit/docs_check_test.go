package audit

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers/registry"
	"github.com/nomad-edge/nomad/jobspec"
)

// docPages are the pages whose examples and claims the checks below read,
// relative to the module root.
func docPages(t *testing.T, root string) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(root, "website/content/docs/*.md"))
	must.NoError(t, err)
	concepts, err := filepath.Glob(filepath.Join(root, "website/content/docs/*/*.md"))
	must.NoError(t, err)
	return append(append(pages, concepts...), filepath.Join(root, "README.md"))
}

var parseCmdRE = regexp.MustCompile(`^\$ bin/nomad job (?:run|validate|plan) (jobspec/testdata/\S+)`)

// TestDocs_ParserExamplesAreTheParsersOutput checks every example of the job
// file parser's errors in the docs (a `$ bin/nomad job run|validate` of a
// file under jobspec/testdata, followed by the error lines it prints)
// against what the parser says of that file today: the same lines, all of
// them. The pages promise that every problem of a file is reported at
// once with its position; an example that shows errors the parser no
// longer gives, or misses ones it does, teaches the wrong thing.
func TestDocs_ParserExamplesAreTheParsersOutput(t *testing.T) {
	root := moduleRoot(t)
	examples := 0
	for _, page := range docPages(t, root) {
		b, err := os.ReadFile(page)
		must.NoError(t, err)
		rel, _ := filepath.Rel(root, page)
		lines := strings.Split(string(b), "\n")
		for i := 0; i < len(lines); i++ {
			m := parseCmdRE.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			file := m[1]
			var shown []string
			for j := i + 1; j < len(lines) && !strings.HasPrefix(lines[j], "```") && !strings.HasPrefix(lines[j], "$ "); j++ {
				if strings.HasPrefix(lines[j], file+":") {
					shown = append(shown, lines[j])
				}
			}
			examples++
			_, perr := jobspec.ParseFile(filepath.Join(root, file))
			must.Error(t, perr, must.Sprintf("%s:%d: %s parses without error, but the page shows errors", rel, i+1, file))
			var said []string
			for _, l := range strings.Split(perr.Error(), "\n") {
				// The parser names the file as it was given; the page names
				// it relative to the root, as the command run from there does.
				l = strings.ReplaceAll(l, filepath.Join(root, file), file)
				if strings.HasPrefix(l, file+":") {
					said = append(said, l)
				}
			}
			must.Eq(t, said, shown, must.Sprintf("%s:%d: the example of %s is not what the parser prints now", rel, i+1, file))
		}
	}
	must.Positive(t, examples, must.Sprint("no parser examples found: the pattern no longer matches the pages"))
}

// pkgDoc is one package of the module and its package comment.
type pkgDoc struct {
	dir     string
	hasDoc  bool
	docText string
	main    bool
}

// packageDocs reads the package comment of every package of the module
// (production files only), by directory relative to the module root.
func packageDocs(t *testing.T, root string) map[string]*pkgDoc {
	t.Helper()
	pkgs := map[string]*pkgDoc{}
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
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		dir := filepath.Dir(path)
		rel, _ := filepath.Rel(root, dir)
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkgDoc{dir: dir}
			pkgs[rel] = p
		}
		p.main = f.Name.Name == "main"
		if f.Doc != nil {
			p.hasDoc = true
			p.docText += f.Doc.Text()
		}
		return nil
	})
	must.NoError(t, err)
	must.MapNotEmpty(t, pkgs, must.Sprint("no packages found"))
	return pkgs
}

var goFileRE = regexp.MustCompile(`([a-z0-9_*]+(?:/[a-z0-9_*]+)*\.go)\b`)

// TestDocs_PackageDocsNameWhatExists checks every package of the module
// has a package comment, and that the Go files a package comment names
// exist (in the package, or relative to the module root when given with a
// directory; a pattern such as *_endpoint.go, at least one). Package docs say what a package owns and which way it may
// call; where one still names files, a renamed or deleted file must take
// the sentence along, or the doc points readers at nothing.
func TestDocs_PackageDocsNameWhatExists(t *testing.T) {
	root := moduleRoot(t)
	var bad []string
	for rel, p := range packageDocs(t, root) {
		if !p.hasDoc && !p.main {
			bad = append(bad, fmt.Sprintf("%s: no package comment", rel))
		}
		for _, m := range goFileRE.FindAllStringSubmatch(p.docText, -1) {
			name := m[1]
			candidates := []string{filepath.Join(p.dir, name)}
			if strings.Contains(name, "/") {
				candidates = append(candidates, filepath.Join(root, name))
			}
			// A pattern (*_endpoint.go) must match at least one file.
			if !slices.ContainsFunc(candidates, func(c string) bool { m, _ := filepath.Glob(c); return len(m) > 0 }) {
				bad = append(bad, fmt.Sprintf("%s: the package comment names %s, which does not exist", rel, name))
			}
		}
	}
	slices.Sort(bad)
	must.SliceEmpty(t, bad, must.Sprintf("package docs out of step with the tree:\n%s", strings.Join(bad, "\n")))
}

// signatureRE finds a function signature in a package comment's code
// block: the line of an API inventory.
var signatureRE = regexp.MustCompile(`(?m)^\s+func [A-Za-z(]`)

// TestDocs_PackageDocsAreNotInventories checks that no package comment
// lists function signatures: go doc already lists the API, always in step
// with the code, and a comment that copies it falls behind the first time
// a method is added (nomad/state's listed 56). A package comment says
// what the package owns, the rules it keeps, and which way it may call.
func TestDocs_PackageDocsAreNotInventories(t *testing.T) {
	var bad []string
	for rel, p := range packageDocs(t, moduleRoot(t)) {
		if n := len(signatureRE.FindAllString(p.docText, -1)); n > 0 {
			bad = append(bad, fmt.Sprintf("%s: the package comment lists %d function signatures; say what the package owns and which way it calls instead (go doc lists the API)", rel, n))
		}
	}
	slices.Sort(bad)
	must.SliceEmpty(t, bad, must.Sprint(strings.Join(bad, "\n")))
}

// TestDocs_LayeredPackagesSayWhichWayTheyCall checks that the package
// comment of every part the import-direction test holds to a rule
// (importRules) says what it imports: the layering is what a reader of
// the package must keep, and the test alone tells them only once they
// have broken it.
func TestDocs_LayeredPackagesSayWhichWayTheyCall(t *testing.T) {
	docs := packageDocs(t, moduleRoot(t))
	var bad []string
	for _, r := range importRules {
		base := strings.TrimSuffix(r.pkg, "/...")
		p, ok := docs[base]
		if !ok {
			continue // a tree of packages without a root package (helper/...)
		}
		if !strings.Contains(strings.ToLower(p.docText), "import") {
			bad = append(bad, fmt.Sprintf("%s: the package comment does not say what it may import (the rule: %s)", base, r.why))
		}
	}
	slices.Sort(bad)
	must.SliceEmpty(t, bad, must.Sprint(strings.Join(bad, "\n")))
}

// TestDocs_ReadmeNamesEveryDriver checks that the README's layout names
// every built-in driver: a newcomer reads it to learn what the client can
// run, and it said "raw_exec and mock_driver" for months after exec and
// docker arrived.
func TestDocs_ReadmeNamesEveryDriver(t *testing.T) {
	root := moduleRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	must.NoError(t, err)
	layout := section(t, b, "## Layout")
	m := regexp.MustCompile("`drivers/` ([^·]+)").FindStringSubmatch(layout)
	must.NotNil(t, m, must.Sprint("the README's layout has no `drivers/` entry"))
	names := registry.Builtin().Names()
	must.SliceNotEmpty(t, names)
	for _, name := range names {
		must.StrContains(t, m[1], name, must.Sprintf("the README's drivers/ entry (%q) does not name %s", strings.TrimSpace(m[1]), name))
	}
}

// section returns the text under heading up to the next heading of the
// same or a higher level.
func section(t *testing.T, doc []byte, heading string) string {
	t.Helper()
	level := strings.Count(strings.Fields(heading)[0], "#")
	var out bytes.Buffer
	in := false
	s := bufio.NewScanner(bytes.NewReader(doc))
	for s.Scan() {
		line := s.Text()
		if h, _, ok := strings.Cut(line, " "); ok && strings.Trim(h, "#") == "" && len(h) > 0 {
			if in && len(h) <= level {
				break
			}
			if line == heading {
				in = true
				continue
			}
		}
		if in {
			out.WriteString(line + "\n")
		}
	}
	must.True(t, in, must.Sprintf("no heading %q", heading))
	return out.String()
}
