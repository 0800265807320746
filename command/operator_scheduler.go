package command

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// OperatorSchedulerCommand is `nomad operator scheduler`.
type OperatorSchedulerCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSchedulerCommand) Synopsis() string {
	return "Provides access to the scheduler configuration"
}

// Help implements cli.Command.
func (c *OperatorSchedulerCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator scheduler <subcommand> [options]

  Read and change the cluster's scheduler configuration, kept in raft.

  Show the configuration:

      $ nomad operator scheduler get-config

  Pause the eval broker (required before deleting evaluations):

      $ nomad operator scheduler set-config -pause-eval-broker=true

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorSchedulerCommand) Run(args []string) int {
	return c.runParent("operator scheduler", args)
}

// OperatorSchedulerGetConfigCommand is `nomad operator scheduler get-config`.
type OperatorSchedulerGetConfigCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSchedulerGetConfigCommand) Synopsis() string {
	return "Display the current scheduler configuration"
}

// Help implements cli.Command.
func (c *OperatorSchedulerGetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator scheduler get-config [options]

  Show the scheduler configuration: the algorithm, whether the eval broker
  is paused and job registrations rejected, and which schedulers may
  preempt. Until one is written it is the default.

` + generalOptions() + `

Scheduler Get Config Options:
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *OperatorSchedulerGetConfigCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("operator scheduler get-config", args, 0, c, &out)
	if !ok {
		return code
	}
	resp, _, err := client.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying scheduler configuration: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, resp)
	}
	c.Ui.Output(formatSchedulerConfig(resp.SchedulerConfig))
	return exitOK
}

// formatSchedulerConfig lays out the configuration in upstream's rows.
func formatSchedulerConfig(cfg *api.SchedulerConfiguration) string {
	p := cfg.PreemptionConfig
	return formatKV([]string{
		"Scheduler Algorithm|" + cfg.SchedulerAlgorithm,
		fmt.Sprintf("Memory Oversubscription|%t", cfg.MemoryOversubscriptionEnabled),
		fmt.Sprintf("Reject Job Registration|%t", cfg.RejectJobRegistration),
		fmt.Sprintf("Pause Eval Broker|%t", cfg.PauseEvalBroker),
		fmt.Sprintf("Preemption System Scheduler|%t", p.SystemSchedulerEnabled),
		fmt.Sprintf("Preemption Service Scheduler|%t", p.ServiceSchedulerEnabled),
		fmt.Sprintf("Preemption Batch Scheduler|%t", p.BatchSchedulerEnabled),
		fmt.Sprintf("Preemption SysBatch Scheduler|%t", p.SysBatchSchedulerEnabled),
		fmt.Sprintf("Modify Index|%d", cfg.ModifyIndex),
	})
}

// OperatorSchedulerSetConfigCommand is `nomad operator scheduler set-config`.
type OperatorSchedulerSetConfigCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorSchedulerSetConfigCommand) Synopsis() string {
	return "Modify the current scheduler configuration"
}

// Help implements cli.Command.
func (c *OperatorSchedulerSetConfigCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator scheduler set-config [options]

  Change the scheduler configuration. Only the flags given change; the
  rest keep their current value. An invalid value is refused naming the
  field.

` + generalOptions() + `

Scheduler Set Config Options:

  -check-index=<index>
    Write only if the stored configuration's modify index is this one
    (get-config shows it), so a concurrent change is not overwritten.

  -scheduler-algorithm=<binpack|spread>
    The placement algorithm: "binpack" fills busy nodes first, "spread"
    the emptiest.

  -memory-oversubscription=<true|false>
    Whether tasks may use memory beyond their reservation, up to their
    memory_max. When false, memory_max is ignored: allocations placed
    meanwhile get no limit beyond memory. Applies to new placements.

  -reject-job-registration=<true|false>
    When true, job registrations, dispatches and scales are refused
    unless made with a management token; with ACLs disabled, all are
    refused. For shedding load during an incident.

  -pause-eval-broker=<true|false>
    When true, the leader's eval broker hands out no evaluations, so no
    scheduling happens; evaluations written meanwhile run once it is
    unset. Deleting evaluations requires it.

  -preempt-batch-scheduler=<true|false>
  -preempt-service-scheduler=<true|false>
  -preempt-sysbatch-scheduler=<true|false>
  -preempt-system-scheduler=<true|false>
    Whether the scheduler of that job type may preempt: evict
    allocations of jobs at least 10 lower in priority from a node where
    a placement does not otherwise fit. The default is system true, the
    others false.
`)
}

// optionalBool is a true/false flag that remembers whether it was given.
type optionalBool struct {
	set, value bool
}

func (b *optionalBool) String() string { return strconv.FormatBool(b.value) }

func (b *optionalBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("must be true or false, got %q", s)
	}
	b.set, b.value = true, v
	return nil
}

func (b *optionalBool) IsBoolFlag() bool { return true }

func (b *optionalBool) apply(to *bool) {
	if b.set {
		*to = b.value
	}
}

// Run implements cli.Command.
func (c *OperatorSchedulerSetConfigCommand) Run(args []string) int {
	var algorithm, checkIndex string
	var oversub, reject, pause, preemptBatch, preemptService, preemptSysBatch, preemptSystem optionalBool
	flags := c.FlagSet("operator scheduler set-config")
	flags.StringVar(&algorithm, "scheduler-algorithm", "", "")
	flags.StringVar(&checkIndex, "check-index", "", "")
	flags.Var(&oversub, "memory-oversubscription", "")
	flags.Var(&reject, "reject-job-registration", "")
	flags.Var(&pause, "pause-eval-broker", "")
	flags.Var(&preemptBatch, "preempt-batch-scheduler", "")
	flags.Var(&preemptService, "preempt-service-scheduler", "")
	flags.Var(&preemptSysBatch, "preempt-sysbatch-scheduler", "")
	flags.Var(&preemptSystem, "preempt-system-scheduler", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	client, code, ok := c.clientFor("operator scheduler set-config", flags.NArg(), 0)
	if !ok {
		return code
	}
	resp, _, err := client.Operator().SchedulerGetConfiguration(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying scheduler configuration: %v", err))
		return exitError
	}
	cfg := resp.SchedulerConfig
	current := cfg.ModifyIndex
	if algorithm != "" {
		cfg.SchedulerAlgorithm = algorithm
	}
	oversub.apply(&cfg.MemoryOversubscriptionEnabled)
	reject.apply(&cfg.RejectJobRegistration)
	pause.apply(&cfg.PauseEvalBroker)
	preemptBatch.apply(&cfg.PreemptionConfig.BatchSchedulerEnabled)
	preemptService.apply(&cfg.PreemptionConfig.ServiceSchedulerEnabled)
	preemptSysBatch.apply(&cfg.PreemptionConfig.SysBatchSchedulerEnabled)
	preemptSystem.apply(&cfg.PreemptionConfig.SystemSchedulerEnabled)

	write := client.Operator().SchedulerSetConfiguration
	if checkIndex != "" {
		index, err := strconv.ParseUint(checkIndex, 10, 64)
		if err != nil {
			return c.argsError(fmt.Sprintf("Invalid -check-index %q: must be a non-negative integer", checkIndex), "operator scheduler set-config")
		}
		cfg.ModifyIndex = index
		write = client.Operator().SchedulerCASConfiguration
	}
	set, _, err := write(cfg, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error setting scheduler configuration: %v", err))
		return exitError
	}
	if !set.Updated {
		c.Ui.Error(fmt.Sprintf("Error performing check index set: check-index %s does not match current state value %d", checkIndex, current))
		return exitError
	}
	c.Ui.Output("Scheduler configuration updated!")
	return exitOK
}
