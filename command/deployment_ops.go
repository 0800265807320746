package command

import (
	"fmt"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// deploymentOp is one of the commands that change a deployment: promote,
// fail, pause, resume. They share their flags, resolution and output.
type deploymentOp struct {
	Meta
	name, synopsis, help string
	// groups takes -group flags (promote).
	groups bool
	// byJob makes the argument a job, whose newest deployment is changed
	// (nomad job promote).
	byJob bool
	do    func(c *api.Client, d *api.Deployment, groups []string) (*api.DeploymentUpdateResponse, error)
	done  string // printed with the short ID
}

// Synopsis implements cli.Command.
func (c *deploymentOp) Synopsis() string { return c.synopsis }

// Help implements cli.Command.
func (c *deploymentOp) Help() string {
	opts := `
  -detach
    Print the evaluation ID and exit without following the deployment.

  -verbose
    Show full IDs.`
	if c.groups {
		opts = `
  -group <name>
    Promote the canaries of this group only; may be repeated. Without it,
    every group's canaries are promoted.` + opts
	}
	usage := "deployment " + c.name + " [options] <deployment id>"
	if c.byJob {
		usage = "job " + c.name + " [options] <job>"
	}
	return strings.TrimSpace(fmt.Sprintf(`
Usage: nomad %s

  %s

`, usage, c.help) + generalOptions() + `

` + strings.ToUpper(c.name[:1]) + c.name[1:] + ` Options:
` + opts)
}

// gerund is the -ing form of an operation's name, for its error message.
func gerund(name string) string {
	if strings.HasSuffix(name, "e") {
		return name[:len(name)-1] + "ing"
	}
	return name + "ing"
}

type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// Run implements cli.Command.
func (c *deploymentOp) Run(args []string) int {
	var detach, verbose bool
	var groups stringList
	flags := c.FlagSet("deployment " + c.name)
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	if c.groups {
		flags.Var(&groups, "group", "")
	}
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	v := view{verbose: verbose}
	client, d, code := c.target(flags.Args(), v)
	if d == nil {
		return code
	}
	resp, err := c.do(client, d, groups)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error %s deployment: %v", gerund(c.name), err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf(c.done, v.id(d.ID)))
	if resp.RevertedJobVersion != nil {
		c.Ui.Output(fmt.Sprintf("Job reverted to version %d", *resp.RevertedJobVersion))
	}
	if resp.EvalID == "" || detach {
		if resp.EvalID != "" {
			c.Ui.Output("Evaluation ID: " + resp.EvalID)
		}
		return exitOK
	}
	return newEvalMonitor(c.Ui, client, v).monitor(resp.EvalID)
}

// target resolves the deployment the command changes: the one its
// argument names, or with byJob the newest of the job it names.
func (c *deploymentOp) target(args []string, v view) (*api.Client, *api.Deployment, int) {
	if c.byJob {
		client, jobID, code := c.jobArg(args, "job "+c.name)
		if jobID == "" {
			return nil, nil, code
		}
		d, _, err := client.Jobs().LatestDeployment(jobID, nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error retrieving deployment: %v", err))
			return nil, nil, exitError
		}
		if d == nil {
			c.Ui.Error(fmt.Sprintf("No deployment found for job %q", jobID))
			return nil, nil, exitError
		}
		return client, d, exitOK
	}
	if len(args) != 1 {
		return nil, nil, c.argsError("This command takes one argument: <deployment id>", "deployment "+c.name)
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return nil, nil, exitError
	}
	d, ok := c.resolveDeployment(client, args[0], v)
	if !ok {
		return nil, nil, exitError
	}
	return client, d, exitOK
}

// newJobPromote is `nomad job promote`: deployment promote on the job's
// newest deployment.
func newJobPromote(m Meta) *deploymentOp {
	op := newDeploymentPromote(m)
	op.byJob = true
	op.help = "Promote the canaries of the job's newest deployment, so that the rest of\n  each group is updated. Every canary of a promoted group must be healthy."
	return op
}

func newDeploymentPromote(m Meta) *deploymentOp {
	return &deploymentOp{
		Meta: m, name: "promote", synopsis: "Promote canaries in a deployment", groups: true,
		help: "Promote the canaries of a deployment, so that the rest of each group is\n  updated. Every canary of a promoted group must be healthy.",
		done: "Deployment %q promoted",
		do: func(c *api.Client, d *api.Deployment, groups []string) (*api.DeploymentUpdateResponse, error) {
			var resp *api.DeploymentUpdateResponse
			var err error
			if len(groups) == 0 {
				resp, _, err = c.Deployments().PromoteAll(d.ID, nil)
			} else {
				resp, _, err = c.Deployments().PromoteGroups(d.ID, groups, nil)
			}
			return resp, err
		},
	}
}

func newDeploymentFail(m Meta) *deploymentOp {
	return &deploymentOp{
		Meta: m, name: "fail", synopsis: "Manually fail a deployment",
		help: "Fail a running or paused deployment. A group with auto_revert rolls the\n  job back to its last stable version.",
		done: "Deployment %q failed",
		do: func(c *api.Client, d *api.Deployment, _ []string) (*api.DeploymentUpdateResponse, error) {
			resp, _, err := c.Deployments().Fail(d.ID, nil)
			return resp, err
		},
	}
}

func newDeploymentPause(m Meta, pause bool) *deploymentOp {
	op := &deploymentOp{
		Meta: m, name: "pause", synopsis: "Pause a deployment",
		help: "Pause a running deployment: nothing more is replaced until it is resumed.",
		done: "Deployment %q paused",
	}
	if !pause {
		op.name, op.synopsis, op.done = "resume", "Resume a paused deployment", "Deployment %q resumed"
		op.help = "Resume a paused deployment."
	}
	op.do = func(c *api.Client, d *api.Deployment, _ []string) (*api.DeploymentUpdateResponse, error) {
		resp, _, err := c.Deployments().Pause(d.ID, pause, nil)
		return resp, err
	}
	return op
}
