package command

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/command/agent"
)

// Run runs the CLI with args (without the program name) on the process's
// standard streams and returns the exit code.
func Run(args []string) int {
	ui := &cli.BasicUi{Reader: os.Stdin, Writer: os.Stdout, ErrorWriter: os.Stderr}
	return RunWithUi(args, ui)
}

// RunWithUi runs the CLI with args, writing through ui.
func RunWithUi(args []string, ui cli.Ui) int {
	// Upstream prints the version command's output for -v and --version.
	if len(args) > 0 {
		switch args[0] {
		case "-v", "-version", "--version":
			args = append([]string{"version"}, args[1:]...)
		}
	}
	c := cli.NewCLI("nomad", agent.Version)
	c.Args = args
	c.Commands = Commands(Meta{Ui: ui})
	if code, unknown := unknownCommand(args, c.Commands, ui); unknown {
		return code
	}
	c.HiddenCommands = []string{"run", "stop", "validate"}
	// -autocomplete-install and -autocomplete-uninstall, as upstream.
	c.Autocomplete = true
	// The cli library writes help in many small pieces; collect them and
	// hand the UI whole text.
	var help, errs bytes.Buffer
	c.HelpWriter = &help
	c.ErrorWriter = &errs
	code, err := c.Run()
	if s := strings.TrimRight(help.String(), "\n"); s != "" {
		ui.Output(s)
	}
	if s := strings.TrimRight(errs.String(), "\n"); s != "" {
		ui.Error(s)
	}
	if err != nil {
		ui.Error(fmt.Sprintf("Error executing CLI: %v", err))
		return exitError
	}
	return code
}

// Commands returns the command table, every command sharing meta's UI.
func Commands(meta Meta) map[string]cli.CommandFactory {
	m := func() Meta { return meta }
	return map[string]cli.CommandFactory{
		"agent": func() (cli.Command, error) { return &agent.Command{Ui: meta.Ui}, nil },

		"job":          func() (cli.Command, error) { return &JobCommand{Meta: m()}, nil },
		"job run":      func() (cli.Command, error) { return &JobRunCommand{Meta: m()}, nil },
		"job history":  func() (cli.Command, error) { return &JobHistoryCommand{Meta: m()}, nil },
		"job inspect":  func() (cli.Command, error) { return &JobInspectCommand{Meta: m()}, nil },
		"job plan":     func() (cli.Command, error) { return &JobPlanCommand{Meta: m()}, nil },
		"job periodic": func() (cli.Command, error) { return &JobPeriodicCommand{Meta: m()}, nil },
		"job periodic force": func() (cli.Command, error) {
			return &JobPeriodicForceCommand{Meta: m()}, nil
		},
		"job dispatch": func() (cli.Command, error) { return &JobDispatchCommand{Meta: m()}, nil },
		"job revert":   func() (cli.Command, error) { return &JobRevertCommand{Meta: m()}, nil },
		"job scale":    func() (cli.Command, error) { return &JobScaleCommand{Meta: m()}, nil },
		"job status":   func() (cli.Command, error) { return &JobStatusCommand{Meta: m()}, nil },
		"job stop":     func() (cli.Command, error) { return &JobStopCommand{Meta: m()}, nil },
		"job restart":  func() (cli.Command, error) { return &JobRestartCommand{Meta: m()}, nil },
		"alloc stop":   func() (cli.Command, error) { return &AllocStopCommand{Meta: m()}, nil },
		"job validate": func() (cli.Command, error) { return &JobValidateCommand{Meta: m()}, nil },

		"job scaling-events":  func() (cli.Command, error) { return &JobScalingEventsCommand{Meta: m()}, nil },
		"scaling":             func() (cli.Command, error) { return &ScalingCommand{Meta: m()}, nil },
		"scaling policy":      func() (cli.Command, error) { return &ScalingPolicyCommand{Meta: m()}, nil },
		"scaling policy info": func() (cli.Command, error) { return &ScalingPolicyInfoCommand{Meta: m()}, nil },
		"scaling policy list": func() (cli.Command, error) { return &ScalingPolicyListCommand{Meta: m()}, nil },

		"alloc":        func() (cli.Command, error) { return &AllocCommand{Meta: m()}, nil },
		"alloc checks": func() (cli.Command, error) { return &AllocChecksCommand{Meta: m()}, nil },
		"alloc status": func() (cli.Command, error) { return &AllocStatusCommand{Meta: m()}, nil },

		"alloc logs":    func() (cli.Command, error) { return &AllocLogsCommand{Meta: m()}, nil },
		"alloc fs":      func() (cli.Command, error) { return &AllocFSCommand{Meta: m()}, nil },
		"alloc restart": func() (cli.Command, error) { return &AllocRestartCommand{Meta: m()}, nil },
		"alloc signal":  func() (cli.Command, error) { return &AllocSignalCommand{Meta: m()}, nil },
		"alloc exec":    func() (cli.Command, error) { return &AllocExecCommand{Meta: m()}, nil },

		"node":              func() (cli.Command, error) { return &NodeCommand{Meta: m()}, nil },
		"node status":       func() (cli.Command, error) { return &NodeStatusCommand{Meta: m()}, nil },
		"node drain":        func() (cli.Command, error) { return &NodeDrainCommand{Meta: m()}, nil },
		"node eligibility":  func() (cli.Command, error) { return &NodeEligibilityCommand{Meta: m()}, nil },
		"node purge":        func() (cli.Command, error) { return &NodePurgeCommand{Meta: m()}, nil },
		"node meta":         func() (cli.Command, error) { return &NodeMetaCommand{Meta: m()}, nil },
		"node intro":        func() (cli.Command, error) { return &NodeIntroCommand{Meta: m()}, nil },
		"node intro create": func() (cli.Command, error) { return &NodeIntroCreateCommand{Meta: m()}, nil },
		"node meta apply":   func() (cli.Command, error) { return &NodeMetaApplyCommand{Meta: m()}, nil },
		"node meta read":    func() (cli.Command, error) { return &NodeMetaReadCommand{Meta: m()}, nil },
		"node pool":         func() (cli.Command, error) { return &NodePoolCommand{Meta: m()}, nil },
		"node pool apply":   func() (cli.Command, error) { return &NodePoolApplyCommand{Meta: m()}, nil },
		"node pool delete":  func() (cli.Command, error) { return &NodePoolDeleteCommand{Meta: m()}, nil },
		"node pool info":    func() (cli.Command, error) { return &NodePoolInfoCommand{Meta: m()}, nil },
		"node pool jobs":    func() (cli.Command, error) { return &NodePoolJobsCommand{Meta: m()}, nil },
		"node pool list":    func() (cli.Command, error) { return &NodePoolListCommand{Meta: m()}, nil },
		"node pool nodes":   func() (cli.Command, error) { return &NodePoolNodesCommand{Meta: m()}, nil },

		"deployment":         func() (cli.Command, error) { return &DeploymentCommand{Meta: m()}, nil },
		"deployment list":    func() (cli.Command, error) { return &DeploymentListCommand{Meta: m()}, nil },
		"deployment status":  func() (cli.Command, error) { return &DeploymentStatusCommand{Meta: m()}, nil },
		"deployment promote": func() (cli.Command, error) { return newDeploymentPromote(m()), nil },
		"deployment fail":    func() (cli.Command, error) { return newDeploymentFail(m()), nil },
		"deployment pause":   func() (cli.Command, error) { return newDeploymentPause(m(), true), nil },
		"deployment resume":  func() (cli.Command, error) { return newDeploymentPause(m(), false), nil },

		"service":        func() (cli.Command, error) { return &ServiceCommand{Meta: m()}, nil },
		"service list":   func() (cli.Command, error) { return &ServiceListCommand{Meta: m()}, nil },
		"service info":   func() (cli.Command, error) { return &ServiceInfoCommand{Meta: m()}, nil },
		"service delete": func() (cli.Command, error) { return &ServiceDeleteCommand{Meta: m()}, nil },

		"eval":        func() (cli.Command, error) { return &EvalCommand{Meta: m()}, nil },
		"eval status": func() (cli.Command, error) { return &EvalStatusCommand{Meta: m()}, nil },

		"server":             func() (cli.Command, error) { return &ServerCommand{Meta: m()}, nil },
		"server members":     func() (cli.Command, error) { return &ServerMembersCommand{Meta: m()}, nil },
		"server join":        func() (cli.Command, error) { return &ServerJoinCommand{Meta: m()}, nil },
		"server force-leave": func() (cli.Command, error) { return &ServerForceLeaveCommand{Meta: m()}, nil },

		"operator":                      func() (cli.Command, error) { return &OperatorCommand{Meta: m()}, nil },
		"ui":                            func() (cli.Command, error) { return &UiCommand{Meta: m()}, nil },
		"operator api":                  func() (cli.Command, error) { return &OperatorAPICommand{Meta: m(), Stdin: os.Stdin}, nil },
		"operator debug":                func() (cli.Command, error) { return &OperatorDebugCommand{Meta: m()}, nil },
		"operator metrics":              func() (cli.Command, error) { return &OperatorMetricsCommand{Meta: m()}, nil },
		"operator raft":                 func() (cli.Command, error) { return &OperatorRaftCommand{Meta: m()}, nil },
		"operator sim":                  func() (cli.Command, error) { return &OperatorSimCommand{Meta: m()}, nil },
		"operator autopilot":            func() (cli.Command, error) { return &OperatorAutopilotCommand{Meta: m()}, nil },
		"operator autopilot get-config": func() (cli.Command, error) { return &OperatorAutopilotGetCommand{Meta: m()}, nil },
		"operator autopilot set-config": func() (cli.Command, error) { return &OperatorAutopilotSetCommand{Meta: m()}, nil },
		"operator autopilot health":     func() (cli.Command, error) { return &OperatorAutopilotHealthCommand{Meta: m()}, nil },
		"operator scheduler":            func() (cli.Command, error) { return &OperatorSchedulerCommand{Meta: m()}, nil },
		"operator scheduler get-config": func() (cli.Command, error) { return &OperatorSchedulerGetConfigCommand{Meta: m()}, nil },
		"operator scheduler set-config": func() (cli.Command, error) { return &OperatorSchedulerSetConfigCommand{Meta: m()}, nil },
		"operator raft list-peers":      func() (cli.Command, error) { return &OperatorRaftListCommand{Meta: m()}, nil },
		"operator snapshot":             func() (cli.Command, error) { return &OperatorSnapshotCommand{Meta: m()}, nil },
		"operator snapshot save":        func() (cli.Command, error) { return &OperatorSnapshotSaveCommand{Meta: m()}, nil },
		"operator snapshot restore":     func() (cli.Command, error) { return &OperatorSnapshotRestoreCommand{Meta: m()}, nil },
		"operator snapshot inspect":     func() (cli.Command, error) { return &OperatorSnapshotInspectCommand{Meta: m()}, nil },
		"operator raft remove-peer":     func() (cli.Command, error) { return &OperatorRaftRemoveCommand{Meta: m()}, nil },

		"operator gossip":                  func() (cli.Command, error) { return &OperatorGossipCommand{Meta: m()}, nil },
		"operator gossip keyring":          func() (cli.Command, error) { return &OperatorGossipKeyringCommand{Meta: m()}, nil },
		"operator gossip keyring generate": func() (cli.Command, error) { return &OperatorGossipKeyringGenerateCommand{Meta: m()}, nil },

		"acl":               func() (cli.Command, error) { return &ACLCommand{Meta: m()}, nil },
		"acl bootstrap":     func() (cli.Command, error) { return &ACLBootstrapCommand{Meta: m()}, nil },
		"acl policy":        func() (cli.Command, error) { return &ACLPolicyCommand{Meta: m()}, nil },
		"acl policy apply":  func() (cli.Command, error) { return &ACLPolicyApplyCommand{Meta: m()}, nil },
		"acl policy list":   func() (cli.Command, error) { return &ACLPolicyListCommand{Meta: m()}, nil },
		"acl policy info":   func() (cli.Command, error) { return &ACLPolicyInfoCommand{Meta: m()}, nil },
		"acl policy delete": func() (cli.Command, error) { return &ACLPolicyDeleteCommand{Meta: m()}, nil },
		"acl token":         func() (cli.Command, error) { return &ACLTokenCommand{Meta: m()}, nil },
		"acl token create":  func() (cli.Command, error) { return &ACLTokenCreateCommand{Meta: m()}, nil },
		"acl token list":    func() (cli.Command, error) { return &ACLTokenListCommand{Meta: m()}, nil },
		"acl token info":    func() (cli.Command, error) { return &ACLTokenInfoCommand{Meta: m()}, nil },
		"acl token self":    func() (cli.Command, error) { return &ACLTokenSelfCommand{Meta: m()}, nil },
		"acl token delete":  func() (cli.Command, error) { return &ACLTokenDeleteCommand{Meta: m()}, nil },
		"namespace":         func() (cli.Command, error) { return &NamespaceCommand{Meta: m()}, nil },
		"namespace apply":   func() (cli.Command, error) { return &NamespaceApplyCommand{Meta: m()}, nil },
		"namespace delete":  func() (cli.Command, error) { return &NamespaceDeleteCommand{Meta: m()}, nil },
		"namespace inspect": func() (cli.Command, error) { return &NamespaceInspectCommand{Meta: m()}, nil },
		"namespace list":    func() (cli.Command, error) { return &NamespaceListCommand{Meta: m()}, nil },
		"namespace status":  func() (cli.Command, error) { return &NamespaceStatusCommand{Meta: m()}, nil },

		"tls":             func() (cli.Command, error) { return &TLSCommand{Meta: m()}, nil },
		"tls ca":          func() (cli.Command, error) { return &TLSCACommand{Meta: m()}, nil },
		"tls ca create":   func() (cli.Command, error) { return &TLSCACreateCommand{Meta: m()}, nil },
		"tls cert":        func() (cli.Command, error) { return &TLSCertCommand{Meta: m()}, nil },
		"tls cert create": func() (cli.Command, error) { return &TLSCertCreateCommand{Meta: m()}, nil },

		"system":    func() (cli.Command, error) { return &SystemCommand{Meta: m()}, nil },
		"system gc": func() (cli.Command, error) { return &SystemGCCommand{Meta: m()}, nil },

		"version": func() (cli.Command, error) { return &VersionCommand{Meta: m()}, nil },

		"var":                          func() (cli.Command, error) { return &VarCommand{Meta: m()}, nil },
		"var list":                     func() (cli.Command, error) { return &VarListCommand{Meta: m()}, nil },
		"var get":                      func() (cli.Command, error) { return &VarGetCommand{Meta: m()}, nil },
		"var put":                      func() (cli.Command, error) { return &VarPutCommand{Meta: m()}, nil },
		"var purge":                    func() (cli.Command, error) { return &VarPurgeCommand{Meta: m()}, nil },
		"var lock":                     func() (cli.Command, error) { return &VarLockCommand{Meta: m()}, nil },
		"var init":                     func() (cli.Command, error) { return &VarInitCommand{Meta: m()}, nil },
		"operator root":                func() (cli.Command, error) { return &OperatorRootCommand{Meta: m()}, nil },
		"operator root keyring":        func() (cli.Command, error) { return &OperatorRootKeyringCommand{Meta: m()}, nil },
		"operator root keyring list":   func() (cli.Command, error) { return &OperatorRootKeyringListCommand{Meta: m()}, nil },
		"operator root keyring rotate": func() (cli.Command, error) { return &OperatorRootKeyringRotateCommand{Meta: m()}, nil },
		"operator root keyring remove": func() (cli.Command, error) { return &OperatorRootKeyringRemoveCommand{Meta: m()}, nil },
		"operator tls":                 func() (cli.Command, error) { return &OperatorTLSCommand{Meta: m()}, nil },
		"operator tls ca":              func() (cli.Command, error) { return &OperatorTLSCACommand{Meta: m()}, nil },
		"operator tls ca list":         func() (cli.Command, error) { return &OperatorTLSCAListCommand{Meta: m()}, nil },
		"operator tls ca rotate":       func() (cli.Command, error) { return &OperatorTLSCARotateCommand{Meta: m()}, nil },

		"status":          func() (cli.Command, error) { return &StatusCommand{Meta: m()}, nil },
		"agent-info":      func() (cli.Command, error) { return &AgentInfoCommand{Meta: m()}, nil },
		"monitor":         func() (cli.Command, error) { return &MonitorCommand{Meta: m()}, nil },
		"eval list":       func() (cli.Command, error) { return &EvalListCommand{Meta: m()}, nil },
		"job allocs":      func() (cli.Command, error) { return &JobAllocsCommand{Meta: m()}, nil },
		"job deployments": func() (cli.Command, error) { return &JobDeploymentsCommand{Meta: m()}, nil },
		"job promote":     func() (cli.Command, error) { return newJobPromote(m()), nil },

		// Upstream's older top-level spellings, kept so scripts work.
		"run":      func() (cli.Command, error) { return &JobRunCommand{Meta: m()}, nil },
		"stop":     func() (cli.Command, error) { return &JobStopCommand{Meta: m()}, nil },
		"validate": func() (cli.Command, error) { return &JobValidateCommand{Meta: m()}, nil },
	}
}
