package rawexec

import (
	"os"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/cgroup"
)

// accountingControllers are the v1 hierarchies a raw_exec task joins, where
// mounted: what its CPU time and memory are read from, and pids, which
// lists every process it started, in its group or not. raw_exec limits
// nothing.
var accountingControllers = []string{"cpu", "cpuacct", "memory", "pids"}

// cgroupHost is what this host offers a raw_exec task: the cgroup version
// (0 for none) and, on v1, the hierarchies mounted.
type cgroupHost struct {
	version     int
	controllers []string
}

// detectCgroupHost looks at the host once per task start. Only root may
// make cgroups; a non-root agent runs its tasks without.
func detectCgroupHost() cgroupHost {
	if !cgroup.Supported || os.Geteuid() != 0 {
		return cgroupHost{}
	}
	if v, _ := cgroup.Detect([]string{"memory"}); v == 2 {
		return cgroupHost{version: 2}
	}
	var have []string
	for _, c := range accountingControllers {
		if cgroup.MountedV1(c) {
			have = append(have, c)
		}
	}
	if len(have) == 0 {
		return cgroupHost{}
	}
	return cgroupHost{version: 1, controllers: have}
}

// taskCgroups makes (or, with cgroup_v2_override on a v2 host, finds) the
// task's cgroups; nil when the host has none. The override does not apply
// on v1 hosts, as upstream's.
func (d *Driver) taskCgroups(cfg *drivers.TaskConfig, tc taskConfig) (*cgroup.Cgroups, error) {
	host := d.cgroupHost()
	switch {
	case host.version == 0:
		return nil, nil
	case host.version == 2 && tc.CgroupV2Override != "":
		cg, err := cgroup.SharedV2(tc.CgroupV2Override)
		if err != nil {
			return nil, &drivers.ConfigError{Key: "cgroup_v2_override", Err: err}
		}
		return &cg, nil
	}
	cg, err := cgroup.Create(cgroup.CreateInput{
		Version:     host.version,
		Name:        cgroup.NameFor(cfg.ID),
		Controllers: host.controllers,
	})
	if err != nil {
		return nil, err
	}
	return &cg, nil
}
