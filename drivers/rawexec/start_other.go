//go:build !linux

package rawexec

import (
	"os/exec"

	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
)

// startIn starts cmd; there are no cgroups nor network namespaces here
// (Capabilities reports NetNamespace false, so netnsPath is empty).
func startIn(cmd *exec.Cmd, _ *cgroup.Cgroups, _ string) error { return cmd.Start() }
