package rawexec

import (
	"fmt"
	"path"
	"path/filepath"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/users"
)

// pluginConfig is the agent's `plugin "raw_exec" { config { ... } }` block.
type pluginConfig struct {
	Enabled bool
	// Denied are the host uids and gids a task's `user` may not have.
	Denied users.Policy
}

func decodePluginConfig(m map[string]any) (pluginConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	pc := pluginConfig{
		Enabled: dec.Bool("enabled"),
		Denied:  users.DecodePolicy(dec),
	}
	return pc, dec.Err()
}

// maxOOMScoreAdj is the kernel's bound on oom_score_adj.
const maxOOMScoreAdj = 1000

// taskConfig is the decoded `config` block of a raw_exec task.
type taskConfig struct {
	Command string
	Args    []string
	// WorkDir is where the command starts; empty means the task dir.
	WorkDir string
	// OOMScoreAdj is written for every task, 0 unless set, so that a task
	// does not inherit the agent's (often -1000, from its unit file)
	// and become the last thing the kernel kills.
	OOMScoreAdj int
	// OOMScoreAdjSet is whether the job set it.
	OOMScoreAdjSet bool
	// CgroupV2Override is an existing v2 cgroup the task joins instead
	// of one of its own.
	CgroupV2Override string
	// DeniedEnvvars are patterns of variable names scrubbed from the
	// task's environment; "*" matches any run of characters.
	DeniedEnvvars []string
}

func decodeTaskConfig(m map[string]any) (taskConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	tc := taskConfig{
		Command:          dec.RequiredString("command"),
		Args:             dec.StringSlice("args"),
		WorkDir:          dec.String("work_dir"),
		OOMScoreAdj:      dec.Int("oom_score_adj"),
		CgroupV2Override: dec.String("cgroup_v2_override"),
		DeniedEnvvars:    dec.StringSlice("denied_envvars"),
	}
	tc.OOMScoreAdjSet = dec.Has("oom_score_adj")
	if err := dec.Err(); err != nil {
		return tc, err
	}
	if tc.WorkDir != "" && !filepath.IsAbs(tc.WorkDir) {
		return tc, &drivers.ConfigError{Key: "work_dir", Err: fmt.Errorf("must be an absolute path, got %q", tc.WorkDir)}
	}
	if tc.OOMScoreAdj < 0 || tc.OOMScoreAdj > maxOOMScoreAdj {
		return tc, &drivers.ConfigError{Key: "oom_score_adj",
			Err: fmt.Errorf("must be from 0 to %d, got %d", maxOOMScoreAdj, tc.OOMScoreAdj)}
	}
	for _, p := range tc.DeniedEnvvars {
		if _, err := path.Match(p, ""); err != nil || p == "" {
			return tc, &drivers.ConfigError{Key: "denied_envvars", Err: fmt.Errorf("bad pattern %q", p)}
		}
	}
	return tc, nil
}
