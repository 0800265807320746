package audit

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/shoenig/test/must"
)

// conceptsDoc is the behaviour reference that code comments cite by section
// name, relative to the module root.
const conceptsDoc = "website/content/docs/concepts/disconnected-clients.md"

var (
	headingRE = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	quotedRE  = regexp.MustCompile(`"([^"]+)"`)
)

// TestDocCitationsNameSections checks that every comment citing the
// disconnected-clients page names sections the page has. Comments cite by
// name, not by number or line, precisely so that they stay right when the
// page grows; a renamed heading must take its citations along. In a comment
// that mentions the page, every quoted phrase starting with a capital letter
// (and every quoted heading) is taken as a section name; test files count,
// since their comments cite the rule a test checks.
func TestDocCitationsNameSections(t *testing.T) {
	root := moduleRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, conceptsDoc))
	must.NoError(t, err)
	headings := map[string]bool{}
	for _, m := range headingRE.FindAllStringSubmatch(string(doc), -1) {
		headings[strings.TrimSpace(m[1])] = true
	}

	var bad []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, cg := range f.Comments {
			text := strings.Join(strings.Fields(cg.Text()), " ")
			if strings.Contains(text, "§") {
				// Section numbers go stale as the page grows; names do not.
				bad = append(bad, fmt.Sprintf("%s:%d: cites a section by number (§); cite its heading by name", rel, fset.Position(cg.Pos()).Line))
			}
			if !strings.Contains(text, "disconnected-clients.md") {
				continue
			}
			for _, m := range quotedRE.FindAllStringSubmatch(text, -1) {
				name := m[1]
				if headings[name] || !unicode.IsUpper([]rune(name)[0]) {
					continue
				}
				bad = append(bad, fmt.Sprintf("%s:%d: cites section %q", rel, fset.Position(cg.Pos()).Line, name))
			}
		}
		return nil
	})
	must.NoError(t, err)
	if len(bad) > 0 {
		t.Fatalf("these comments cite sections that %s does not have (its headings are the names to use):\n%s",
			conceptsDoc, strings.Join(bad, "\n"))
	}
}
