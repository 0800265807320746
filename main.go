// Command nomad is the nomad-edge CLI and agent.
package main

import (
	"os"
	// Periodic jobs name IANA time zones; edge images often ship no
	// zoneinfo, so the binary carries its own copy.
	_ "time/tzdata"

	"github.com/nomad-edge/nomad/command"
	"github.com/nomad-edge/nomad/drivers/exec"
)

func main() {
	// The exec driver re-executes this binary as the init of a task's
	// namespaces; that process never reaches the CLI.
	exec.Init()
	os.Exit(command.Run(os.Args[1:]))
}
