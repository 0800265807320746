package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// uiWriter is where ui writes its output, for what must go out without
// the newline Output adds.
func uiWriter(ui cli.Ui) io.Writer {
	switch u := ui.(type) {
	case *cli.BasicUi:
		return u.Writer
	case *cli.MockUi:
		return u.OutputWriter
	}
	return os.Stdout
}

// VarCommand is `nomad var`, the parent of the variable commands.
type VarCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarCommand) Synopsis() string { return "Interact with variables" }

// Help implements cli.Command.
func (c *VarCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var <subcommand> [options] [args]

  Variables hold configuration and secrets for jobs at file-like paths in a
  namespace. The servers encrypt their items at rest with the cluster's
  root keys (see "nomad operator root keyring").

  Write an example variable specification:

      $ nomad var init

  Create or update a variable:

      $ nomad var put secret/creds user=me pass=s3cret

  Read one, list them, delete one:

      $ nomad var get secret/creds
      $ nomad var list secret/
      $ nomad var purge secret/creds

  Run a command while holding a lock:

      $ nomad var lock locks/backup ./backup.sh

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *VarCommand) Run(args []string) int { return c.runParent("var", args) }

// varFormats are what -out accepts, per command.
var (
	varGetFormats  = []string{"go-template", "hcl", "json", "none", "table"}
	varListFormats = []string{"go-template", "json", "table", "terse"}
)

// varOutput is -out and -template, with the default upstream picks: a
// terminal gets def, a redirect gets JSON.
type varOutput struct {
	format string
	tmpl   string
}

func (o *varOutput) register(f *flag.FlagSet) {
	f.StringVar(&o.format, "out", "", "")
	f.StringVar(&o.tmpl, "template", "", "")
}

// resolve applies the default and checks the combination.
func (o *varOutput) resolve(allowed []string, def string) error {
	if o.format == "" {
		o.format = "json"
		if isTerminal(os.Stdout) {
			o.format = def
		}
	}
	if !slices.Contains(allowed, o.format) {
		return userErrorf("Invalid -out %q: use one of %s", o.format, strings.Join(allowed, ", "))
	}
	if o.format == "go-template" && o.tmpl == "" {
		return userErrorf("A template must be supplied using -template when using go-template formatting")
	}
	if o.format != "go-template" && o.tmpl != "" {
		return userErrorf("The -template flag is only valid with -out=go-template")
	}
	return nil
}

// renderVar renders a variable as o says ("" for none).
func (o varOutput) renderVar(v *api.Variable) (string, error) {
	switch o.format {
	case "json":
		b, err := json.MarshalIndent(v, "", "  ")
		return string(b), err
	case "hcl":
		return varHCL(v), nil
	case "table":
		return varTable(v), nil
	case "go-template":
		return renderTemplate(o.tmpl, v)
	}
	return "", nil
}

func renderTemplate(tmpl string, v any) (string, error) {
	t, err := template.New("out").Parse(tmpl)
	if err != nil {
		return "", userErrorf("Error parsing the template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return "", userErrorf("Error executing the template: %w", err)
	}
	return buf.String(), nil
}

// varTable is upstream's table of one variable: its metadata, then its
// items.
func varTable(v *api.Variable) string {
	meta := []string{
		"Namespace|" + v.Namespace,
		"Path|" + v.Path,
		"Create Time|" + formatUnixNanoTime(v.CreateTime),
	}
	if v.CreateTime != v.ModifyTime {
		meta = append(meta, "Modify Time|"+formatUnixNanoTime(v.ModifyTime))
	}
	meta = append(meta, fmt.Sprintf("Check Index|%d", v.ModifyIndex))
	if v.Lock != nil {
		meta = append(meta, "Lock TTL|"+v.Lock.TTL, "Lock Delay|"+v.Lock.LockDelay)
		if v.Lock.ID != "" {
			meta = append(meta, "Lock ID|"+v.Lock.ID)
		}
	}
	out := formatKV(meta)
	if len(v.Items) > 0 {
		out += "\n\nItems\n" + formatMapKV(v.Items)
	}
	return out
}

// varHCL is a variable as a specification `var put` reads back: server
// fields marked as such, modify_index consulted for check-and-set.
func varHCL(v *api.Variable) string {
	var b strings.Builder
	lines := [][2]string{
		{"namespace", strconv.Quote(v.Namespace)},
		{"path", strconv.Quote(v.Path)},
		{"create_index", fmt.Sprintf("%d  # Set by server", v.CreateIndex)},
		{"modify_index", fmt.Sprintf("%d  # Set by server; consulted for check-and-set", v.ModifyIndex)},
		{"create_time", fmt.Sprintf("%d   # Set by server", v.CreateTime)},
		{"modify_time", fmt.Sprintf("%d   # Set by server", v.ModifyTime)},
	}
	for _, l := range lines {
		fmt.Fprintf(&b, "%-12s = %s\n", l[0], l[1])
	}
	b.WriteString("\nitems = {\n")
	keys := slices.Sorted(maps.Keys(v.Items))
	width := 0
	for _, k := range keys {
		width = max(width, len(hclKey(k)))
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "  %*s = %s\n", width, hclKey(k), strconv.Quote(v.Items[k]))
	}
	b.WriteString("}\n")
	return b.String()
}

// hclKey quotes an item key that is not an HCL identifier.
func hclKey(k string) string {
	for i, r := range k {
		if r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return strconv.Quote(k)
	}
	if k == "" {
		return `""`
	}
	return k
}

// casConflictMessage explains a lost check-and-set and how to go past it.
func casConflictMessage(check uint64, conflict *api.Variable) string {
	if conflict == nil {
		return fmt.Sprintf("Check-and-Set conflict\n\n    Your provided check-index (%d) does not match the server-side state: no variable exists\n    at this path. Use -check-index=0 to create it.", check)
	}
	return fmt.Sprintf("Check-and-Set conflict\n\n    Your provided check-index (%d) does not match the server-side index (%d),\n    last updated %s. To write anyway, add -force or -check-index=%d before\n    the positional arguments.",
		check, conflict.ModifyIndex, formatUnixNanoTime(conflict.ModifyTime), conflict.ModifyIndex)
}

// VarListCommand is `nomad var list`.
type VarListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarListCommand) Synopsis() string { return "List variable metadata" }

// Help implements cli.Command.
func (c *VarListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var list [options] <prefix>

  List the variables whose path starts with prefix (all of them without
  one), without their items. With -namespace=* every namespace the token
  may list is searched. With -per-page, the token of the next page goes to
  standard error (or into the JSON), leaving standard output to the list.

  If ACLs are enabled, only variables the token has the 'variables:list'
  capability on are listed.

` + generalOptions() + `

List Options:

  -per-page=<n>
    How many variables to show per page.

  -page-token=<token>
    Where to start: the next page token of the previous page.

  -filter=<expression>
    A filter expression over the variables' metadata. The prefix argument
    is cheaper; use it when it is enough.

  -out=<go-template|json|table|terse>
    Output format. Defaults to "table" when standard output is a terminal
    and "json" when it is redirected. "terse" prints only paths (namespace
    and path with -namespace=*).

  -template=<template>
    The template of -out=go-template.
`)
}

// Run implements cli.Command.
func (c *VarListCommand) Run(args []string) int {
	flags := c.FlagSet("var list")
	var out varOutput
	out.register(flags)
	var perPage int
	var pageToken, filter string
	flags.IntVar(&perPage, "per-page", 0, "")
	flags.StringVar(&pageToken, "page-token", "", "")
	flags.StringVar(&filter, "filter", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() > 1 {
		return c.argsError("This command takes 0 or 1 arguments: <prefix>", "var list")
	}
	if err := out.resolve(varListFormats, "table"); err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	client, code, ok := c.clientFor("var list", 0, 0)
	if !ok {
		return code
	}
	q := &api.QueryOptions{Prefix: flags.Arg(0), PerPage: int32(perPage), NextToken: pageToken, Filter: filter}
	vars, qm, err := client.Variables().List(q)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving vars: %v", err))
		return exitError
	}
	wildcard := c.allNamespaces()
	switch out.format {
	case "json":
		var v any = vars
		if qm.NextToken != "" {
			v = struct {
				Data      []*api.VariableMetadata
				QueryMeta *api.QueryMeta
			}{vars, qm}
		}
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
		c.Ui.Output(string(b))
		return exitOK
	case "go-template":
		s, err := renderTemplate(out.tmpl, vars)
		if err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
		c.Ui.Output(s)
	case "terse":
		for _, v := range vars {
			if wildcard {
				c.Ui.Output(v.Namespace + " " + v.Path)
			} else {
				c.Ui.Output(v.Path)
			}
		}
	default:
		if len(vars) == 0 {
			c.Ui.Output("No matching variables found")
			break
		}
		lines := []string{"Namespace|Path|Last Updated"}
		for _, v := range vars {
			lines = append(lines, v.Namespace+"|"+v.Path+"|"+formatUnixNanoTime(v.ModifyTime))
		}
		c.Ui.Output(formatList(lines))
	}
	if qm.NextToken != "" {
		c.Ui.Error("Next page token: " + qm.NextToken)
	}
	return exitOK
}

// VarGetCommand is `nomad var get`.
type VarGetCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *VarGetCommand) Synopsis() string { return "Read a variable" }

// Help implements cli.Command.
func (c *VarGetCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad var get [options] <path>

  Show a variable with its items. If ACLs are enabled, this needs the
  'variables:read' capability on the variable's namespace and path.

` + generalOptions() + `

Get Options:

  -item=<key>
    Print only the value of this item, without a trailing newline, for
    piping into another program. It takes precedence over -out.

  -out=<go-template|hcl|json|none|table>
    Output format. Defaults to "table" when standard output is a terminal
    and "json" when it is redirected.

  -template=<template>
    The template of -out=go-template.
`)
}

// Run implements cli.Command.
func (c *VarGetCommand) Run(args []string) int {
	flags := c.FlagSet("var get")
	var out varOutput
	out.register(flags)
	var item string
	flags.StringVar(&item, "item", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if err := out.resolve(varGetFormats, "table"); err != nil && item == "" {
		c.Ui.Error(err.Error())
		return exitError
	}
	client, code, ok := c.clientFor("var get", flags.NArg(), 1)
	if !ok {
		return code
	}
	v, _, err := client.Variables().Read(flags.Arg(0), nil)
	if errors.Is(err, api.ErrVariableNotFound) {
		c.Ui.Error("Variable not found")
		return exitError
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving variable: %v", err))
		return exitError
	}
	if item != "" {
		val, ok := v.Items[item]
		if !ok {
			c.Ui.Error(fmt.Sprintf("Variable does not contain %q item", item))
			return exitError
		}
		// Raw, no newline: the value as stored, for a pipe.
		fmt.Fprint(uiWriter(c.Ui), val)
		return exitOK
	}
	s, err := out.renderVar(v)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	if s != "" {
		c.Ui.Output(s)
	}
	return exitOK
}
