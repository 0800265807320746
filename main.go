// Command nomad is the nomad-edge CLI and agent.
package main

import (
	"os"

	"github.com/nomad-edge/nomad/command"
)

func main() { os.Exit(command.Run(os.Args[1:])) }
