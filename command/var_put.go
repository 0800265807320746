package command

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"

	"github.com/nomad-edge/nomad/api"
)

// VarPutCommand is `nomad var put`.
type VarPutCommand struct {
	Meta
	// stdin is where "-" reads from; nil means os.Stdin.
	stdin io.Reader
}

// Synopsis implements cli.Command.
func (c *VarPutCommand) Synopsis() string { return "Create or update a variable" }

// Help implements cli.Command.
func (c *VarPutCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var put [options] <variable spec file reference> [<key>=<value>]...
       nomad var put [options] <path to store variable> [<variable spec file reference>] [<key>=<value>]...

  Create a variable, or update one. The items come from a variable
  specification (a file given as @path, or standard input given as "-",
  whose format -in names), from key=value arguments, or both; arguments
  win over the specification. A value may be @path (the file's contents,
  as they are) or "-" (standard input).

  Without -check-index or -force, put only creates: writing over an
  existing variable is a check-and-set conflict. A specification's
  modify_index is its check index unless -check-index says otherwise.

  If ACLs are enabled, this needs the 'variables:write' capability on the
  destination namespace and path.

` + generalOptions() + `

Apply Options:

  -check-index=<index>
    Write only if the stored variable's modify index is this one (0: only
    if none exists).

  -force
    Write whatever is stored.

  -in=<hcl|json>
    The format of a specification read from standard input, or from a file
    whose extension does not say. Defaults to "json".

  -out=<go-template|hcl|json|none|table>
    How to show the variable written. Defaults to "none" when standard
    output is a terminal and "json" when it is redirected.

  -template=<template>
    The template of -out=go-template.

  -verbose
    Say on standard error what was read from where.
`)
}

func (c *VarPutCommand) in() io.Reader {
	if c.stdin != nil {
		return c.stdin
	}
	return os.Stdin
}

// Run implements cli.Command.
func (c *VarPutCommand) Run(args []string) int {
	flags := c.FlagSet("var put")
	var out varOutput
	out.register(flags)
	var checkIndex uint64
	var force, verbose bool
	var inFormat string
	flags.Uint64Var(&checkIndex, "check-index", 0, "")
	flags.BoolVar(&force, "force", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.StringVar(&inFormat, "in", "json", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	checkSet := false
	flags.Visit(func(f *flag.Flag) { checkSet = checkSet || f.Name == "check-index" })
	if force && checkSet {
		return c.argsError("-force and -check-index can't be used together", "var put")
	}
	if inFormat != "hcl" && inFormat != "json" {
		return c.argsError(fmt.Sprintf("Invalid -in %q: use hcl or json", inFormat), "var put")
	}
	if err := out.resolve(varGetFormats, "none"); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	args = flags.Args()
	if len(args) == 0 {
		return c.argsError("Not enough arguments: give a path or a variable specification", "var put")
	}
	v := &api.Variable{Items: api.VariableItems{}}
	var specIndex *uint64
	readSpec := func(ref string) error {
		spec, idx, err := c.readSpec(ref, inFormat)
		if err != nil {
			return err
		}
		if verbose {
			c.Ui.Error(fmt.Sprintf("Read variable specification from %s", ref))
		}
		if spec.Path != "" && v.Path == "" {
			v.Path = spec.Path
		}
		if spec.Namespace != "" {
			v.Namespace = spec.Namespace
		}
		for k, val := range spec.Items {
			v.Items[k] = val
		}
		specIndex = idx
		return nil
	}
	first := args[0]
	args = args[1:]
	if first == "-" || strings.HasPrefix(first, "@") {
		if err := readSpec(first); err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
	} else {
		v.Path = first
		if len(args) > 0 && (args[0] == "-" || strings.HasPrefix(args[0], "@")) {
			if err := readSpec(args[0]); err != nil {
				c.Ui.Error(err.Error())
				return exitError
			}
			args = args[1:]
		}
	}
	for _, kv := range args {
		k, val, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return c.argsError(fmt.Sprintf("Invalid item %q: use key=value", kv), "var put")
		}
		switch {
		case val == "-":
			b, err := io.ReadAll(c.in())
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error reading item %q from standard input: %v", k, err))
				return exitError
			}
			val = string(b)
		case strings.HasPrefix(val, "@"):
			b, err := os.ReadFile(val[1:])
			if err != nil {
				c.Ui.Error(fmt.Sprintf("Error reading item %q: %v", k, err))
				return exitError
			}
			val = string(b)
		}
		v.Items[k] = val
	}
	if v.Path == "" {
		return c.argsError("Missing the variable path: give it as the first argument or in the specification", "var put")
	}
	if len(v.Items) == 0 {
		return c.argsError("Must supply data", "var put")
	}
	if v.Namespace == "" {
		v.Namespace = c.namespace
	}
	client, code, ok := c.clientFor("var put", 0, 0)
	if !ok {
		return code
	}
	var wo *api.WriteOptions
	if v.Namespace != "" {
		wo = &api.WriteOptions{Namespace: v.Namespace}
	}
	var written *api.Variable
	var err error
	switch {
	case force:
		written, _, err = client.Variables().Create(v, wo)
	default:
		check := checkIndex
		if !checkSet && specIndex != nil {
			check = *specIndex
		}
		written, _, err = client.Variables().CheckedUpdate(v, check, wo)
		var conflict api.ErrCASConflict
		if errors.As(err, &conflict) {
			c.Ui.Error(casConflictMessage(check, conflict.Conflict))
			return exitError
		}
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating variable: %v", err))
		return exitError
	}
	if out.format == "none" {
		verb := "Updated"
		if written.CreateIndex == written.ModifyIndex {
			verb = "Created"
		}
		c.Ui.Output(fmt.Sprintf("%s variable %q with modify index %d", verb, written.Path, written.ModifyIndex))
		return exitOK
	}
	s, err := out.renderVar(written)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	c.Ui.Output(s)
	return exitOK
}

// readSpec reads a variable specification from "-" (standard input, in
// format def) or "@path" (its extension names the format, else def). idx
// is the specification's modify index, when it has one.
func (c *VarPutCommand) readSpec(ref, def string) (*api.Variable, *uint64, error) {
	var src []byte
	var err error
	name, format := "<stdin>", def
	if ref == "-" {
		src, err = io.ReadAll(c.in())
	} else {
		name = ref[1:]
		src, err = os.ReadFile(name)
		switch filepath.Ext(name) {
		case ".json":
			format = "json"
		case ".hcl":
			format = "hcl"
		}
	}
	if err != nil {
		return nil, nil, userErrorf("Error reading variable specification: %w", err)
	}
	if format == "json" {
		return parseVarJSON(name, src)
	}
	return parseVarHCL(name, src)
}

func parseVarJSON(name string, src []byte) (*api.Variable, *uint64, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(src, &raw); err != nil {
		return nil, nil, userErrorf("Error parsing %s: %w", name, err)
	}
	known := map[string]bool{"Namespace": true, "Path": true, "Items": true, "CreateIndex": true,
		"ModifyIndex": true, "CreateTime": true, "ModifyTime": true, "Lock": true}
	for k := range raw {
		if !known[k] {
			return nil, nil, userErrorf("Error parsing %s: unknown field %q", name, k)
		}
	}
	var v api.Variable
	if err := json.Unmarshal(src, &v); err != nil {
		return nil, nil, userErrorf("Error parsing %s: %w", name, err)
	}
	var idx *uint64
	if _, ok := raw["ModifyIndex"]; ok {
		idx = &v.ModifyIndex
	}
	return &v, idx, nil
}

// parseVarHCL reads the specification `var init` writes and `var get
// -out=hcl` prints: path, namespace, and items as a block or a map; the
// server's fields are read (modify_index is the check index) or ignored.
// Anything else is refused by name, at its position.
func parseVarHCL(name string, src []byte) (*api.Variable, *uint64, error) {
	file, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, nil, userErrorf("Error parsing %s: %s", name, diags.Error())
	}
	body := file.Body.(*hclsyntax.Body)
	v := &api.Variable{Items: api.VariableItems{}}
	var idx *uint64
	str := func(a *hclsyntax.Attribute) (string, error) {
		val, d := a.Expr.Value(nil)
		if d.HasErrors() || val.Type() != cty.String || val.IsNull() {
			return "", fmt.Errorf("%s:%d:%d: %s must be a string", name, a.SrcRange.Start.Line, a.SrcRange.Start.Column, a.Name)
		}
		return val.AsString(), nil
	}
	items := func(vals map[string]cty.Value, at hcl.Range) error {
		for k, val := range vals {
			if val.Type() != cty.String || val.IsNull() {
				return fmt.Errorf("%s:%d:%d: item %q must be a string", name, at.Start.Line, at.Start.Column, k)
			}
			v.Items[k] = val.AsString()
		}
		return nil
	}
	for _, a := range body.Attributes {
		switch a.Name {
		case "path", "namespace":
			s, err := str(a)
			if err != nil {
				return nil, nil, err
			}
			if a.Name == "path" {
				v.Path = s
			} else {
				v.Namespace = s
			}
		case "items":
			val, d := a.Expr.Value(nil)
			if d.HasErrors() || !(val.Type().IsObjectType() || val.Type().IsMapType()) {
				return nil, nil, fmt.Errorf("%s:%d:%d: items must be a map of strings", name, a.SrcRange.Start.Line, a.SrcRange.Start.Column)
			}
			if err := items(val.AsValueMap(), a.SrcRange); err != nil {
				return nil, nil, err
			}
		case "modify_index":
			val, d := a.Expr.Value(nil)
			if d.HasErrors() || val.Type() != cty.Number {
				return nil, nil, fmt.Errorf("%s:%d:%d: modify_index must be a number", name, a.SrcRange.Start.Line, a.SrcRange.Start.Column)
			}
			n, _ := val.AsBigFloat().Uint64()
			idx = &n
		case "create_index", "create_time", "modify_time":
			// Set by the server; read back from `var get -out=hcl`.
		default:
			return nil, nil, fmt.Errorf("%s:%d:%d: unknown key %q: a variable specification has path, namespace and items", name, a.SrcRange.Start.Line, a.SrcRange.Start.Column, a.Name)
		}
	}
	for _, b := range body.Blocks {
		if b.Type != "items" || len(b.Labels) != 0 {
			r := b.DefRange()
			return nil, nil, fmt.Errorf("%s:%d:%d: unknown block %q: a variable specification has path, namespace and items", name, r.Start.Line, r.Start.Column, b.Type)
		}
		vals := map[string]cty.Value{}
		for k, a := range b.Body.Attributes {
			val, d := a.Expr.Value(nil)
			if d.HasErrors() {
				return nil, nil, fmt.Errorf("%s:%d:%d: item %q: %s", name, a.SrcRange.Start.Line, a.SrcRange.Start.Column, k, d.Error())
			}
			vals[k] = val
		}
		if err := items(vals, b.DefRange()); err != nil {
			return nil, nil, err
		}
	}
	return v, idx, nil
}

// VarPurgeCommand is `nomad var purge`.
type VarPurgeCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarPurgeCommand) Synopsis() string { return "Purge a variable" }

// Help implements cli.Command.
func (c *VarPurgeCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var purge [options] <path>

  Delete a variable for good. If ACLs are enabled, this needs the
  'variables:destroy' capability on the variable's namespace and path.

` + generalOptions() + `

Purge Options:

  -check-index=<index>
    Delete only if the stored variable's modify index is this one.
`)
}

// Run implements cli.Command.
func (c *VarPurgeCommand) Run(args []string) int {
	flags := c.FlagSet("var purge")
	var checkIndex uint64
	flags.Uint64Var(&checkIndex, "check-index", 0, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	checkSet := false
	flags.Visit(func(f *flag.Flag) { checkSet = checkSet || f.Name == "check-index" })
	client, code, ok := c.clientFor("var purge", flags.NArg(), 1)
	if !ok {
		return code
	}
	path := flags.Arg(0)
	var err error
	if checkSet {
		_, err = client.Variables().CheckedDelete(path, checkIndex, nil)
		var conflict api.ErrCASConflict
		if errors.As(err, &conflict) {
			c.Ui.Error(casConflictMessage(checkIndex, conflict.Conflict))
			return exitError
		}
	} else {
		_, err = client.Variables().Delete(path, nil)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error purging variable: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully purged variable %q!", path))
	return exitOK
}

// VarInitCommand is `nomad var init`.
type VarInitCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarInitCommand) Synopsis() string { return "Create an example variable specification file" }

// Help implements cli.Command.
func (c *VarInitCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var init [options] [<filename>]

  Write an example variable specification to start from. Without a
  filename it is spec.nv.hcl, or spec.nv.json with -out=json.

Init Options:

  -out=<hcl|json>
    Format of the specification. Defaults to "hcl".

  -quiet
    Do not print the success message.
`)
}

// varSpecHCL is the example specification var init writes.
const varSpecHCL = `# The path of the variable. When it is set here, "nomad var put @file"
# needs no path argument.
# path = "path/to/variable"

# The namespace of the variable; -namespace and NOMAD_NAMESPACE override
# it.
# namespace = "default"

# The items are the only required part: string keys and values, encrypted
# by the servers as one unit. Keys without dots are easier to use in
# templates.
items {
  key1 = "value 1"
  key2 = "value 2"
}
`

// varSpecJSON is varSpecHCL in JSON.
const varSpecJSON = `{
  "Items": {
    "key1": "value 1",
    "key2": "value 2"
  }
}
`

// Run implements cli.Command.
func (c *VarInitCommand) Run(args []string) int {
	flags := c.FlagSet("var init")
	var format string
	var quiet bool
	flags.StringVar(&format, "out", "hcl", "")
	flags.BoolVar(&quiet, "quiet", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes 0 or 1 arguments: [<filename>]", "var init")
	}
	content, file := varSpecHCL, "spec.nv.hcl"
	switch format {
	case "hcl":
	case "json":
		content, file = varSpecJSON, "spec.nv.json"
	default:
		return c.argsError(fmt.Sprintf("Invalid -out %q: use hcl or json", format), "var init")
	}
	if flags.NArg() == 1 {
		file = flags.Arg(0)
	}
	if _, err := os.Stat(file); err == nil {
		c.Ui.Error(fmt.Sprintf("Specification file %q already exists", file))
		return exitError
	}
	if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to write %q: %v", file, err))
		return exitError
	}
	if !quiet {
		c.Ui.Output(fmt.Sprintf("Example variable specification written to %s", file))
	}
	return exitOK
}
