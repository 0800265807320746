package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// ACLPolicyApplyCommand is `nomad acl policy apply`.
type ACLPolicyApplyCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLPolicyApplyCommand) Synopsis() string { return "Create or update an ACL policy" }

// Help implements cli.Command.
func (c *ACLPolicyApplyCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl policy apply [options] <name> <path>

  Write the policy <name> with the rules in the file at <path> ("-" reads
  standard input). Rules are HCL:

      namespace "default" { policy = "read" }
      node { policy = "read" }

  Needs a management token.

Apply Options:

  -description=<text>
    What the policy is for.

  -namespace=<namespace>, -job=<id>, -group=<name>, -task=<name>
    Attach the policy to workloads: the identities of every task of the
    job in the namespace (-namespace and -job), of one group of it
    (-group too), or of one task (-task too) get its rules on top of
    their implicit policy. Each flag needs the ones before it.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ACLPolicyApplyCommand) Run(args []string) int {
	flags := c.FlagSet("acl policy apply")
	var desc string
	var job api.JobACL
	flags.StringVar(&desc, "description", "", "")
	flags.StringVar(&job.JobID, "job", "", "")
	flags.StringVar(&job.Group, "group", "", "")
	flags.StringVar(&job.Task, "task", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	// -namespace is the general flag: here it names the workload's
	// namespace, and the policy itself belongs to none.
	job.Namespace = c.namespace
	for _, need := range []struct {
		set, missing bool
		flag, needs  string
	}{
		{job.Task != "", job.Group == "", "-task", "-group"},
		{job.Group != "", job.JobID == "", "-group", "-job"},
		{job.JobID != "", job.Namespace == "", "-job", "-namespace"},
		{job.Namespace != "", job.JobID == "", "-namespace", "-job"},
	} {
		if need.set && need.missing {
			c.Ui.Error(fmt.Sprintf("%s is required if %s is set", need.needs, need.flag))
			return exitError
		}
	}
	var attach *api.JobACL
	if job.JobID != "" {
		attach = &job
	}
	client, code, ok := c.clientFor("acl policy apply", flags.NArg(), 2)
	if !ok {
		return code
	}
	name, path := flags.Arg(0), flags.Arg(1)
	var rules []byte
	var err error
	if path == "-" {
		rules, err = io.ReadAll(os.Stdin)
	} else {
		rules, err = os.ReadFile(path)
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading policy rules: %v", err))
		return exitError
	}
	if _, err := client.ACLPolicies().Upsert(&api.ACLPolicy{Name: name, Description: desc, Rules: string(rules), JobACL: attach}, nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error writing ACL policy: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully wrote %q ACL policy!", name))
	return 0
}

// ACLPolicyListCommand is `nomad acl policy list`.
type ACLPolicyListCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLPolicyListCommand) Synopsis() string { return "List ACL policies" }

// Help implements cli.Command.
func (c *ACLPolicyListCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl policy list [options]

  List the policies the token may read (all of them for a management
  token).

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ACLPolicyListCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("acl policy list", args, 0, c, &out)
	if !ok {
		return code
	}
	policies, _, err := client.ACLPolicies().List(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error listing ACL policies: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, policies)
	}
	if len(policies) == 0 {
		c.Ui.Output("No policies found")
		return 0
	}
	lines := []string{"Name|Description"}
	for _, p := range policies {
		lines = append(lines, p.Name+"|"+p.Description)
	}
	c.Ui.Output(formatList(lines))
	return 0
}

// ACLPolicyInfoCommand is `nomad acl policy info`.
type ACLPolicyInfoCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLPolicyInfoCommand) Synopsis() string { return "Fetch info on an existing ACL policy" }

// Help implements cli.Command.
func (c *ACLPolicyInfoCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl policy info [options] <name>

  Print a policy and its rules.

` + generalOptions() + "\n\nOutput Options:\n" + outputFlagsHelp)
}

// Run implements cli.Command.
func (c *ACLPolicyInfoCommand) Run(args []string) int {
	flags := c.FlagSet("acl policy info")
	var out outputFlags
	out.register(flags)
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("acl policy info", flags.NArg(), 1)
	if !ok {
		return code
	}
	p, _, err := client.ACLPolicies().Info(flags.Arg(0), nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading ACL policy: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, p)
	}
	c.Ui.Output(formatKV([]string{
		"Name|" + p.Name,
		"Description|" + p.Description,
		fmt.Sprintf("CreateIndex|%d", p.CreateIndex),
		fmt.Sprintf("ModifyIndex|%d", p.ModifyIndex),
	}))
	if j := p.JobACL; j != nil {
		c.Ui.Output("\nAssociated Workload")
		c.Ui.Output(formatKV([]string{
			"Namespace|" + j.Namespace,
			"JobID|" + j.JobID,
			"Group|" + j.Group,
			"Task|" + j.Task,
		}))
	}
	c.Ui.Output("\nRules\n\n" + strings.TrimSpace(p.Rules))
	return 0
}

// ACLPolicyDeleteCommand is `nomad acl policy delete`.
type ACLPolicyDeleteCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *ACLPolicyDeleteCommand) Synopsis() string { return "Delete an existing ACL policy" }

// Help implements cli.Command.
func (c *ACLPolicyDeleteCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad acl policy delete [options] <name>

  Delete a policy. Tokens naming it keep the name and get nothing from
  it. Needs a management token.

` + generalOptions())
}

// Run implements cli.Command.
func (c *ACLPolicyDeleteCommand) Run(args []string) int {
	flags := c.FlagSet("acl policy delete")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("acl policy delete", flags.NArg(), 1)
	if !ok {
		return code
	}
	if _, err := client.ACLPolicies().Delete(flags.Arg(0), nil); err != nil {
		c.Ui.Error(fmt.Sprintf("Error deleting ACL policy: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("Successfully deleted %q ACL policy!", flags.Arg(0)))
	return 0
}
