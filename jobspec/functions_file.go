package jobspec

import (
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/bmatcuk/doublestar/v4"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

// ErrFileFunctionsDisabled is what the file functions return where the
// parser may not read the local file system (the agent's parse endpoint,
// whose file system is not the caller's).
var ErrFileFunctionsDisabled = errors.New("file functions are disabled here: the job file is parsed away from the files it names")

// fileFuncs are the functions that read the file system, relative to the
// job file's directory.
type fileFuncs struct {
	baseDir  string
	disabled bool
	// base is the rest of the function table, for the templates that
	// templatefile renders.
	base func() map[string]function.Function
}

// path resolves a path argument against the job file's directory.
func (f fileFuncs) path(p string) (string, error) {
	if f.disabled {
		return "", ErrFileFunctionsDisabled
	}
	p, err := expandHome(p)
	if err != nil {
		return "", err
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(f.baseDir, p)
	}
	return filepath.Clean(p), nil
}

func expandHome(p string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("expanding ~: %w", err)
	}
	return filepath.Join(home, strings.TrimPrefix(p, "~")), nil
}

// read returns the contents of a file named by a function argument.
func (f fileFuncs) read(p string) ([]byte, error) {
	full, err := f.path(p)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return nil, function.NewArgErrorf(0, "reading %s: %s", p, errors.Unwrap(err))
	}
	return b, nil
}

func (f fileFuncs) table() map[string]function.Function {
	text := func(p string) (string, error) {
		b, err := f.read(p)
		if err != nil {
			return "", err
		}
		if !utf8.Valid(b) {
			return "", function.NewArgErrorf(0, "%s is not UTF-8 text; use filebase64", p)
		}
		return string(b), nil
	}
	return map[string]function.Function{
		"abspath": stringFunc("path", func(p string) (string, error) {
			if f.disabled {
				return "", ErrFileFunctionsDisabled
			}
			return filepath.Abs(p)
		}),
		"basename": stringFunc("path", func(p string) (string, error) { return filepath.Base(p), nil }),
		"dirname":  stringFunc("path", func(p string) (string, error) { return filepath.Dir(p), nil }),
		"pathexpand": stringFunc("path", func(p string) (string, error) {
			if f.disabled {
				return "", ErrFileFunctionsDisabled
			}
			return expandHome(p)
		}),
		"file": stringFunc("path", text),
		"filebase64": stringFunc("path", func(p string) (string, error) {
			b, err := f.read(p)
			if err != nil {
				return "", err
			}
			return base64.StdEncoding.EncodeToString(b), nil
		}),
		"fileexists": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}},
			Type:   function.StaticReturnType(cty.Bool),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				full, err := f.path(args[0].AsString())
				if err != nil {
					return cty.UnknownVal(cty.Bool), err
				}
				st, err := os.Stat(full)
				switch {
				case errors.Is(err, os.ErrNotExist):
					return cty.False, nil
				case err != nil:
					return cty.UnknownVal(cty.Bool), function.NewArgErrorf(0, "%s", err)
				case !st.Mode().IsRegular():
					return cty.UnknownVal(cty.Bool), function.NewArgErrorf(0, "%s is not a regular file", args[0].AsString())
				}
				return cty.True, nil
			},
		}),
		"fileset": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "pattern", Type: cty.String}},
			Type:   function.StaticReturnType(cty.Set(cty.String)),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				return f.fileset(args[0].AsString(), args[1].AsString())
			},
		}),
		"templatefile": function.New(&function.Spec{
			Params: []function.Parameter{{Name: "path", Type: cty.String}, {Name: "vars", Type: cty.DynamicPseudoType}},
			Type:   function.StaticReturnType(cty.String),
			Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
				src, err := text(args[0].AsString())
				if err != nil {
					return cty.UnknownVal(cty.String), err
				}
				return f.renderTemplate(args[0].AsString(), src, args[1])
			},
		}),
	}
}

// fileset lists the regular files under dir matching pattern (with **
// for any depth), as paths relative to dir, sorted.
func (f fileFuncs) fileset(dir, pattern string) (cty.Value, error) {
	root, err := f.path(dir)
	if err != nil {
		return cty.UnknownVal(cty.Set(cty.String)), err
	}
	if !doublestar.ValidatePattern(pattern) {
		return cty.UnknownVal(cty.Set(cty.String)), function.NewArgErrorf(1, "invalid pattern %q", pattern)
	}
	matches, err := doublestar.Glob(os.DirFS(root), pattern, doublestar.WithFilesOnly())
	if err != nil {
		return cty.UnknownVal(cty.Set(cty.String)), function.NewArgErrorf(0, "listing %s: %s", dir, err)
	}
	sort.Strings(matches)
	if len(matches) == 0 {
		return cty.SetValEmpty(cty.String), nil
	}
	vals := make([]cty.Value, 0, len(matches))
	for _, m := range matches {
		vals = append(vals, cty.StringVal(m))
	}
	return cty.SetVal(vals), nil
}

// renderTemplate evaluates a template file's ${...} and %{...} with vars
// as its only variables, and the function table minus templatefile (a
// template may not render templates, so rendering always ends).
func (f fileFuncs) renderTemplate(name, src string, vars cty.Value) (cty.Value, error) {
	if !vars.Type().IsObjectType() && !vars.Type().IsMapType() {
		return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "vars must be an object or map, got %s", vars.Type().FriendlyName())
	}
	expr, diags := hclsyntax.ParseTemplate([]byte(src), name, hcl.InitialPos)
	if diags.HasErrors() {
		return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "%s", diags.Error())
	}
	fns := f.base()
	delete(fns, "templatefile")
	ctx := &hcl.EvalContext{Variables: vars.AsValueMap(), Functions: fns}
	if escaped := passRuntimeRefs([]byte(src), expr, ctx.Variables); escaped != nil {
		if expr, diags = hclsyntax.ParseTemplate(escaped, name, hcl.InitialPos); diags.HasErrors() {
			return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "%s", diags.Error())
		}
	}
	for _, tr := range expr.Variables() {
		if _, ok := ctx.Variables[tr.RootName()]; !ok {
			if runtimeRoot(tr.RootName()) {
				return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "template %s uses %q in an expression: the client's values (NOMAD_*, attr, meta, node, env) pass through only as a whole ${...}, for the client to interpolate", name, tr.RootName())
			}
			return cty.UnknownVal(cty.String), function.NewArgErrorf(1, "template %s refers to %q, which vars does not set", name, tr.RootName())
		}
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "%s", diags.Error())
	}
	if v.Type() != cty.String {
		return cty.UnknownVal(cty.String), function.NewArgErrorf(0, "template %s does not render to a string", name)
	}
	return v, nil
}

// runtimeRoot says whether a template's reference names a value the
// client resolves when the task starts: ${NOMAD_ALLOC_DIR},
// ${attr.kernel.name}, ${meta.zone}, ${node.unique.name}, ${env["HOME"]}.
func runtimeRoot(name string) bool {
	switch name {
	case "attr", "meta", "node", "env":
		return true
	}
	return strings.HasPrefix(name, "NOMAD_")
}

// passRuntimeRefs returns src with every interpolation that is nothing
// but a reference to a runtime root vars does not set escaped ("$${"), so
// that it renders verbatim and the client interpolates it, as the job
// file's own strings keep them; nil when there is none. A reference
// inside a larger expression cannot be kept and is left for the caller
// to refuse.
func passRuntimeRefs(src []byte, expr hclsyntax.Expression, vars map[string]cty.Value) []byte {
	var at []int
	keep := func(part hclsyntax.Expression) {
		tr, ok := part.(*hclsyntax.ScopeTraversalExpr)
		if !ok || !runtimeRoot(tr.Traversal.RootName()) {
			return
		}
		if _, set := vars[tr.Traversal.RootName()]; set {
			return
		}
		if i := interpolationStart(src, tr.SrcRange.Start.Byte); i >= 0 {
			at = append(at, i)
		}
	}
	hclsyntax.VisitAll(expr, func(n hclsyntax.Node) hcl.Diagnostics {
		switch e := n.(type) {
		case *hclsyntax.TemplateExpr:
			for _, part := range e.Parts {
				keep(part)
			}
		case *hclsyntax.TemplateWrapExpr:
			keep(e.Wrapped)
		}
		return nil
	})
	if len(at) == 0 {
		return nil
	}
	sort.Sort(sort.Reverse(sort.IntSlice(at)))
	out := append([]byte{}, src...)
	for _, i := range at {
		out = append(out[:i+1], out[i:]...)
		out[i] = '$'
	}
	return out
}

// interpolationStart is where the "${" that opens the reference at byte
// ref begins (spaces and a strip marker may sit between), or -1 when the
// reference does not open an interpolation.
func interpolationStart(src []byte, ref int) int {
	j := ref - 1
	for j >= 0 && (src[j] == ' ' || src[j] == '\t' || src[j] == '\n' || src[j] == '\r' || src[j] == '~') {
		j--
	}
	if j >= 1 && src[j] == '{' && src[j-1] == '$' {
		return j - 1
	}
	return -1
}
