package jobspec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/json"

	"github.com/nomad-edge/nomad/helper/nesting"
)

// envVarPrefix is what an environment variable's name starts with to set
// a job file variable: NOMAD_VAR_dc=dc2 sets var.dc.
const envVarPrefix = "NOMAD_VAR_"

// valueSources reads every value given from outside the file, lowest
// precedence first: the environment, the var files (opts.VarFiles in
// order, then opts.VarContent), the -var flags in order. Each source
// maps a name to its value; undeclared lists the names that must be
// declared (from files and flags, not the environment).
func (p *parser) valueSources(opts Options) ([]map[string]rawValue, []undeclaredValue) {
	var sources []map[string]rawValue
	var undeclared []undeclaredValue

	env := map[string]rawValue{}
	for _, kv := range opts.Env {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(name, envVarPrefix) {
			continue
		}
		env[strings.TrimPrefix(name, envVarPrefix)] = rawValue{from: "the " + name + " environment variable", literal: &val}
	}
	sources = append(sources, env)

	fileSource := func(filename string, src []byte) {
		attrs, ok := p.varFile(filename, src)
		if !ok {
			return
		}
		vals := make(map[string]rawValue, len(attrs))
		for name, a := range attrs {
			vals[name] = rawValue{expr: a.Expr, from: filename}
			undeclared = append(undeclared, undeclaredValue{name: name, from: filename, rng: a.NameRange.Ptr()})
		}
		sources = append(sources, vals)
	}
	for _, path := range opts.VarFiles {
		src, err := os.ReadFile(path)
		if err != nil {
			p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("reading var file: %s", err)})
			continue
		}
		fileSource(path, src)
	}
	if opts.VarContent != "" {
		fileSource(varContentName, []byte(opts.VarContent))
	}

	flags := map[string]rawValue{}
	for _, kv := range opts.ArgVars {
		name, val, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError,
				Summary: fmt.Sprintf("invalid -var %q: write it as name=value", kv)})
			continue
		}
		flags[name] = rawValue{from: "-var " + name, literal: &val}
		undeclared = append(undeclared, undeclaredValue{name: name, from: "-var " + name})
	}
	sources = append(sources, flags)
	return sources, undeclared
}

// varContentName names Options.VarContent in messages.
const varContentName = "<Variables>"

// varFile parses a var file: `name = value` lines in HCL, or a JSON
// object for a file whose name ends in .json.
func (p *parser) varFile(filename string, src []byte) (hcl.Attributes, bool) {
	var body hcl.Body
	isJSON := strings.EqualFold(filepath.Ext(filename), ".json")
	// A var file may come from a remote caller (the parse endpoint's
	// Variables): refuse deep nesting before a recursive parser sees it.
	if isJSON {
		if err := nesting.CheckJSON(src, MaxNestingDepth); err != nil {
			p.diags = append(p.diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: fmt.Sprintf("var file %s: %s", filename, err)})
			return nil, false
		}
	} else if d := nesting.CheckHCL(src, filename, MaxNestingDepth); d != nil {
		p.diags = append(p.diags, d)
		return nil, false
	}
	if isJSON {
		f, diags := json.Parse(src, filename)
		p.diags = append(p.diags, diags...)
		if diags.HasErrors() {
			return nil, false
		}
		body = f.Body
	} else {
		f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
		p.diags = append(p.diags, diags...)
		if diags.HasErrors() {
			return nil, false
		}
		body = f.Body
	}
	attrs, diags := body.JustAttributes()
	if diags.HasErrors() {
		for _, d := range diags {
			d.Summary = "invalid var file " + filename + ": it holds only name = value pairs; " + d.Summary
		}
		p.diags = append(p.diags, diags...)
		return nil, false
	}
	return attrs, true
}
