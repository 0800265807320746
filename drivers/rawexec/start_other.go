//go:build !linux

package rawexec

import (
	"os/exec"

	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
)

// startIn starts cmd; there are no cgroups here.
func startIn(cmd *exec.Cmd, _ *cgroup.Cgroups) error { return cmd.Start() }
