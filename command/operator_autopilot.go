package command

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/api"
)

// OperatorAutopilotCommand is `nomad operator autopilot`.
type OperatorAutopilotCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorAutopilotCommand) Synopsis() string {
	return "Provides access to the Autopilot subsystem"
}

// Help implements cli.Command.
func (c *OperatorAutopilotCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator autopilot <subcommand> [options]

  Read and change the servers' autopilot configuration, kept in raft, and
  see the servers' health as the leader judges it.

  Show the configuration:

      $ nomad operator autopilot get-config

  Keep dead servers in raft:

      $ nomad operator autopilot set-config -cleanup-dead-servers=false

  Show the servers' health:

      $ nomad operator autopilot health

  Run a subcommand with -help for its options.
`)
}

// Run implements cli.Command.
func (c *OperatorAutopilotCommand) Run(args []string) int {
	return c.runParent("operator autopilot", args)
}

// OperatorAutopilotGetCommand is `nomad operator autopilot get-config`.
type OperatorAutopilotGetCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorAutopilotGetCommand) Synopsis() string {
	return "Display the current Autopilot configuration"
}

// Help implements cli.Command.
func (c *OperatorAutopilotGetCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator autopilot get-config [options]

  Show the autopilot configuration; until one is written, the servers'
  autopilot block (upstream's defaults when it is absent).

  If ACLs are enabled, this command requires a token with 'operator:read'.

` + generalOptions() + `

Autopilot Get Config Options:
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *OperatorAutopilotGetCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("operator autopilot get-config", args, 0, c, &out)
	if !ok {
		return code
	}
	cfg, _, err := client.Operator().AutopilotGetConfiguration(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying Autopilot configuration: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, cfg)
	}
	c.Ui.Output(formatAutopilotConfig(cfg))
	return exitOK
}

// formatAutopilotConfig lays the configuration out as upstream does.
func formatAutopilotConfig(cfg *api.AutopilotConfiguration) string {
	return strings.Join([]string{
		fmt.Sprintf("CleanupDeadServers = %t", cfg.CleanupDeadServers),
		fmt.Sprintf("LastContactThreshold = %s", cfg.LastContactThreshold),
		fmt.Sprintf("MaxTrailingLogs = %d", cfg.MaxTrailingLogs),
		fmt.Sprintf("MinQuorum = %d", cfg.MinQuorum),
		fmt.Sprintf("ServerStabilizationTime = %s", cfg.ServerStabilizationTime),
		fmt.Sprintf("EnableRedundancyZones = %t", cfg.EnableRedundancyZones),
		fmt.Sprintf("DisableUpgradeMigration = %t", cfg.DisableUpgradeMigration),
		fmt.Sprintf("EnableCustomUpgrades = %t", cfg.EnableCustomUpgrades),
	}, "\n")
}

// OperatorAutopilotSetCommand is `nomad operator autopilot set-config`.
type OperatorAutopilotSetCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorAutopilotSetCommand) Synopsis() string {
	return "Modify the current Autopilot configuration"
}

// Help implements cli.Command.
func (c *OperatorAutopilotSetCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator autopilot set-config [options]

  Change the autopilot configuration. Only the flags given change; the
  write fails rather than overwrite a change made meanwhile.

  If ACLs are enabled, this command requires a token with 'operator:write'.

` + generalOptions() + `

Set Config Options:

  -cleanup-dead-servers=[true|false]
    Whether the leader removes from raft the servers that stayed failed
    in gossip past the dead-server cleanup time.

  -last-contact-threshold=200ms
    How long a follower may go without hearing from the leader and still
    be healthy.

  -max-trailing-logs=<value>
    How many log entries a server may trail the leader by and still be
    healthy.

  -min-quorum=<value>
    The fewest voters the dead-server cleanup leaves.

  -server-stabilization-time=<10s>
    How long a server must have been healthy to count towards the
    failure tolerance.

  Upstream's Enterprise options (-disable-upgrade-migration,
  -enable-redundancy-zones, -enable-custom-upgrades, -redundancy-zone-tag,
  -upgrade-version-tag) are refused by name.
`)
}

// Run implements cli.Command.
func (c *OperatorAutopilotSetCommand) Run(args []string) int {
	var cleanup, disableMigration, zones, custom optionalBool
	var lastContact, stabilization, trailing, minQuorum, zoneTag, versionTag string
	flags := c.FlagSet("operator autopilot set-config")
	flags.Var(&cleanup, "cleanup-dead-servers", "")
	flags.StringVar(&lastContact, "last-contact-threshold", "", "")
	flags.StringVar(&stabilization, "server-stabilization-time", "", "")
	flags.StringVar(&trailing, "max-trailing-logs", "", "")
	flags.StringVar(&minQuorum, "min-quorum", "", "")
	flags.Var(&disableMigration, "disable-upgrade-migration", "")
	flags.Var(&zones, "enable-redundancy-zones", "")
	flags.Var(&custom, "enable-custom-upgrades", "")
	flags.StringVar(&zoneTag, "redundancy-zone-tag", "", "")
	flags.StringVar(&versionTag, "upgrade-version-tag", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	name := "operator autopilot set-config"
	for flag, set := range map[string]bool{
		"-disable-upgrade-migration": disableMigration.set, "-enable-redundancy-zones": zones.set,
		"-enable-custom-upgrades": custom.set, "-redundancy-zone-tag": zoneTag != "", "-upgrade-version-tag": versionTag != "",
	} {
		if set {
			return c.argsError(fmt.Sprintf("%s is an upstream Enterprise option this version does not have", flag), name)
		}
	}
	client, code, ok := c.clientFor(name, flags.NArg(), 0)
	if !ok {
		return code
	}
	cfg, _, err := client.Operator().AutopilotGetConfiguration(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying Autopilot configuration: %v", err))
		return exitError
	}
	cleanup.apply(&cfg.CleanupDeadServers)
	for _, d := range []struct {
		flag, value string
		to          *time.Duration
	}{{"-last-contact-threshold", lastContact, &cfg.LastContactThreshold}, {"-server-stabilization-time", stabilization, &cfg.ServerStabilizationTime}} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil || v < 0 {
			return c.argsError(fmt.Sprintf("Invalid %s %q: must be a duration such as 200ms", d.flag, d.value), name)
		}
		*d.to = v
	}
	if trailing != "" {
		v, err := strconv.ParseUint(trailing, 10, 64)
		if err != nil {
			return c.argsError(fmt.Sprintf("Invalid -max-trailing-logs %q: must be a non-negative integer", trailing), name)
		}
		cfg.MaxTrailingLogs = v
	}
	if minQuorum != "" {
		v, err := strconv.ParseUint(minQuorum, 10, 32)
		if err != nil {
			return c.argsError(fmt.Sprintf("Invalid -min-quorum %q: must be a non-negative integer", minQuorum), name)
		}
		cfg.MinQuorum = uint(v)
	}
	updated, _, err := client.Operator().AutopilotCASConfiguration(cfg, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error setting Autopilot configuration: %v", err))
		return exitError
	}
	if !updated {
		c.Ui.Error("Configuration could not be atomically updated, please try again")
		return exitError
	}
	c.Ui.Output("Configuration updated!")
	return exitOK
}

// OperatorAutopilotHealthCommand is `nomad operator autopilot health`.
type OperatorAutopilotHealthCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *OperatorAutopilotHealthCommand) Synopsis() string {
	return "Display the current Autopilot health"
}

// Help implements cli.Command.
func (c *OperatorAutopilotHealthCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator autopilot health [options]

  Show the servers' health as the leader judges it: each server's gossip
  status, last contact with the leader, raft term and index; whether the
  cluster is healthy, and how many voters it could lose and keep a
  quorum. Exits 2 when the cluster is not healthy.

  If ACLs are enabled, this command requires a token with 'operator:read'.

` + generalOptions() + `

Autopilot Health Options:
` + outputFlagsHelp + `
`)
}

// Run implements cli.Command.
func (c *OperatorAutopilotHealthCommand) Run(args []string) int {
	var out outputFlags
	client, code, ok := c.setupRead("operator autopilot health", args, 0, c, &out)
	if !ok {
		return code
	}
	h, err := client.Operator().AutopilotServerHealth(nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error querying Autopilot health: %v", err))
		return exitError
	}
	if out.set() {
		return c.writeFormatted(out, h)
	}
	c.Ui.Output(formatKV([]string{
		fmt.Sprintf("Healthy|%t", h.Healthy),
		fmt.Sprintf("Failure Tolerance|%d", h.FailureTolerance),
		"Leader|" + h.Leader,
		"Voters|" + strings.Join(h.Voters, ", "),
	}))
	rows := []string{"ID|Name|Address|Serf Status|Version|Leader|Voter|Healthy|Last Contact|Last Term|Last Index|Stable Since"}
	for _, s := range h.Servers {
		stable := "-"
		if !s.StableSince.IsZero() {
			stable = s.StableSince.UTC().Format(time.RFC3339)
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%t|%t|%t|%s|%d|%d|%s", s.ID, s.Name, s.Address, s.SerfStatus,
			s.Version, s.Leader, s.Voter, s.Healthy, s.LastContact, s.LastTerm, s.LastIndex, stable))
	}
	c.Ui.Output("\nServers\n" + formatList(rows))
	if !h.Healthy {
		return 2
	}
	return exitOK
}
