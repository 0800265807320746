package command

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// NamespaceCommand is `nomad namespace`, the parent of the namespace
// subcommands.
type NamespaceCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceCommand) Synopsis() string { return "Interact with namespaces" }

// Help implements cli.Command.
func (c *NamespaceCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace <subcommand> [options] [args]

  Create, list, read and delete namespaces. A namespace groups jobs (and
  their allocations and evaluations) under a name that ACL policies grant
  capabilities on. The "default" namespace always exists.

  Create or update a namespace:

      $ nomad namespace apply -description "edge fleet" fleet

  List namespaces, and show one:

      $ nomad namespace list
      $ nomad namespace status fleet

  Delete a namespace (it must have no jobs that are not dead):

      $ nomad namespace delete fleet

  Subcommands: apply, delete, inspect, list, status. Run one with -help
  for its options.
`)
}

// Run implements cli.Command.
func (c *NamespaceCommand) Run(args []string) int { return c.runParent("namespace", args) }

// NamespaceApplyCommand is `nomad namespace apply`.
type NamespaceApplyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceApplyCommand) Synopsis() string { return "Create or update a namespace" }

// Help implements cli.Command.
func (c *NamespaceApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace apply [options] <input>

  Create or update a namespace. <input> is the path of a specification
  file ("-" reads standard input), or, when no such file exists, the name
  of the namespace to write with the flags below. A specification is HCL
  (or JSON with -json):

      name        = "fleet"
      description = "edge fleet"
      meta {
        owner = "edge-team"
      }

  or the same fields in a block:

      namespace "fleet" {
        description = "edge fleet"
      }

  Updating a namespace by name keeps the fields no flag sets. Needs a
  management token.

Apply Options:

  -description=<text>
    What the namespace is for.

  -quota=<name>
    A resource quota to attach. Quotas are an upstream Enterprise feature
    and are refused by the servers.

  -json
    Parse the specification file as JSON.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NamespaceApplyCommand) Run(args []string) int {
	flags := c.FlagSet("namespace apply")
	var desc, quota string
	var isJSON bool
	flags.StringVar(&desc, "description", "", "")
	flags.StringVar(&quota, "quota", "", "")
	flags.BoolVar(&isJSON, "json", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("namespace apply", flags.NArg(), 1)
	if !ok {
		return code
	}
	set := map[string]bool{}
	flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	ns, err := c.namespaceFromInput(client, flags.Arg(0), isJSON)
	if err != nil {
		c.Ui.Error("Error " + err.Error())
		return exitError
	}
	if set["description"] {
		ns.Description = desc
	}
	if set["quota"] {
		ns.Quota = quota
	}
	if _, err := client.Namespaces().Register(ns, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error applying namespace specification: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully applied namespace %q!", ns.Name))
	return 0
}

// namespaceFromInput reads the namespace a specification file (or "-")
// describes, or, for an input that is no file, the stored namespace of
// that name (a new one when there is none) for the flags to change.
func (c *NamespaceApplyCommand) namespaceFromInput(client *api.Client, input string, isJSON bool) (*api.Namespace, error) {
	var src []byte
	var err error
	name := input
	if input == "-" {
		name = "<stdin>"
		src, err = io.ReadAll(os.Stdin)
	} else {
		src, err = os.ReadFile(input)
	}
	switch {
	case err == nil:
		ns, err := parseNamespaceSpec(src, name, isJSON)
		if err != nil {
			return nil, fmt.Errorf("parsing namespace specification:\n%w", err)
		}
		return ns, nil
	case errors.Is(err, fs.ErrNotExist) && !strings.ContainsAny(input, "/\\.") && input != "-":
		existing, _, err := client.Namespaces().Info(input, nil)
		var ure *api.UnexpectedResponseError
		if err != nil && !(errors.As(err, &ure) && ure.IsNotFound()) {
			return nil, fmt.Errorf("looking up namespace: %w", err)
		}
		if existing == nil {
			existing = &api.Namespace{Name: input}
		}
		return existing, nil
	}
	return nil, fmt.Errorf("reading namespace specification: %w", err)
}

// NamespaceListCommand is `nomad namespace list`.
type NamespaceListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceListCommand) Synopsis() string { return "List namespaces" }

// Help implements cli.Command.
func (c *NamespaceListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace list [options]

  List the namespaces the token may see (all of them for a management
  token).

List Options:

  -json
    Print the namespaces as JSON.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *NamespaceListCommand) Run(args []string) int {
	flags := c.FlagSet("namespace list")
	var out outputFlags
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("namespace list", flags.NArg(), 0)
	if !ok {
		return code
	}
	namespaces, _, err := client.Namespaces().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error retrieving namespaces: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, namespaces)
	}
	if len(namespaces) == 0 {
		c.Ui.Output("No namespaces found")
		return 0
	}
	lines := []string{"Name|Description"}
	sorted := slices.SortedFunc(slices.Values(namespaces), func(a, b *api.Namespace) int { return strings.Compare(a.Name, b.Name) })
	for _, ns := range sorted {
		lines = append(lines, ns.Name+"|"+ns.Description)
	}
	c.Ui.Output(formatList(lines))
	return 0
}

// NamespaceStatusCommand is `nomad namespace status`.
type NamespaceStatusCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceStatusCommand) Synopsis() string { return "Display a namespace's status" }

// Help implements cli.Command.
func (c *NamespaceStatusCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace status [options] <namespace>

  Show a namespace: its name, description, quota and metadata.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *NamespaceStatusCommand) Run(args []string) int {
	var out outputFlags
	ns, code := c.readNamespace("namespace status", args, c, &out)
	if ns == nil {
		return code
	}
	if out.set() {
		return c.writeFormatted(out, ns)
	}
	c.Ui.Output(formatKV([]string{
		"Name|" + ns.Name,
		"Description|" + ns.Description,
		"Quota|" + ns.Quota,
	}))
	if len(ns.Meta) > 0 {
		c.Ui.Output("\nMetadata")
		c.Ui.Output(formatMapKV(ns.Meta))
	}
	return 0
}

// readNamespace parses a namespace read command's flags, with -json and
// -t, and reads the namespace its one argument names; nil, with the exit
// code, when it cannot.
func (m *Meta) readNamespace(name string, args []string, c helpCommand, out *outputFlags) (*api.Namespace, int) {
	flags := m.FlagSet(name)
	out.register(flags)
	if !m.parseFlags(flags, args, c) {
		return nil, exitError
	}
	client, code, ok := m.clientFor(name, flags.NArg(), 1)
	if !ok {
		return nil, code
	}
	ns, _, err := client.Namespaces().Info(flags.Arg(0), nil)
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error looking up namespace: %v", err))
		return nil, exitError
	}
	return ns, exitOK
}

// NamespaceInspectCommand is `nomad namespace inspect`.
type NamespaceInspectCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceInspectCommand) Synopsis() string { return "Inspect a namespace" }

// Help implements cli.Command.
func (c *NamespaceInspectCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace inspect [options] <namespace>

  Print a namespace as JSON, in the API's shape.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NamespaceInspectCommand) Run(args []string) int {
	var out outputFlags
	ns, code := c.readNamespace("namespace inspect", args, c, &out)
	if ns == nil {
		return code
	}
	if out.tmpl != "" {
		return c.writeFormatted(out, ns)
	}
	return c.outputJSON(ns)
}

// NamespaceDeleteCommand is `nomad namespace delete`.
type NamespaceDeleteCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *NamespaceDeleteCommand) Synopsis() string { return "Delete a namespace" }

// Help implements cli.Command.
func (c *NamespaceDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad namespace delete [options] <namespace>

  Delete a namespace. The "default" namespace cannot be deleted, nor one
  that still has jobs that are not dead: the refusal names them. Needs a
  management token.

` + generalOptions())
}

// Run implements cli.Command.
func (c *NamespaceDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("namespace delete")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("namespace delete", flags.NArg(), 1)
	if !ok {
		return code
	}
	if _, err := client.Namespaces().Delete(flags.Arg(0), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting namespace: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted namespace %q!", flags.Arg(0)))
	return 0
}

// outputJSON prints v as indented JSON.
func (m *Meta) outputJSON(v any) int {
	buf, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		m.Ui.Error(fmt.Sprintf("Error encoding JSON: %v", err))
		return exitError
	}
	m.Ui.Output(string(buf))
	return 0
}
