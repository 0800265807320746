package exec

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/users"
)

// Namespace modes of the `pid_mode` and `ipc_mode` keys.
const (
	modePrivate = "private"
	modeHost    = "host"
)

// pluginConfig is the agent's `plugin "exec" { config { ... } }` block.
type pluginConfig struct {
	DefaultPidMode string
	DefaultIpcMode string
	NoPivotRoot    bool
	// AllowCaps are the capabilities a task may have, lower case without
	// the "cap_" prefix.
	AllowCaps []string
	// Denied are the host uids and gids no task may run as.
	Denied users.Policy
}

// defaultAllowCaps is upstream's default `allow_caps`: what a container
// runtime grants a root process by default, minus the network raw socket.
var defaultAllowCaps = []string{
	"audit_write", "chown", "dac_override", "fowner", "fsetid", "kill", "mknod",
	"net_bind_service", "setfcap", "setgid", "setpcap", "setuid", "sys_chroot",
}

func decodePluginConfig(m map[string]any) (pluginConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	pc := pluginConfig{
		DefaultPidMode: dec.String("default_pid_mode"),
		DefaultIpcMode: dec.String("default_ipc_mode"),
		NoPivotRoot:    dec.Bool("no_pivot_root"),
		AllowCaps:      dec.StringSlice("allow_caps"),
		Denied:         users.DecodePolicy(dec),
	}
	if err := dec.Err(); err != nil {
		return pc, err
	}
	var errs []error
	for key, v := range map[string]*string{"default_pid_mode": &pc.DefaultPidMode, "default_ipc_mode": &pc.DefaultIpcMode} {
		if *v == "" {
			*v = modePrivate
		}
		if *v != modePrivate && *v != modeHost {
			errs = append(errs, &drivers.ConfigError{Key: key, Err: fmt.Errorf("want %q or %q, got %q", modePrivate, modeHost, *v)})
		}
	}
	if pc.AllowCaps == nil {
		pc.AllowCaps = slices.Clone(defaultAllowCaps)
	}
	caps, err := normalizeCaps(pc.AllowCaps, false)
	if err != nil {
		errs = append(errs, &drivers.ConfigError{Key: "allow_caps", Err: err})
	}
	pc.AllowCaps = caps
	if len(errs) > 0 {
		return pc, errs[0]
	}
	return pc, nil
}

// taskConfig is the decoded `config` block of an exec task.
type taskConfig struct {
	Command   string
	Args      []string
	PidMode   string
	IpcMode   string
	CapAdd    []string
	CapDrop   []string
	WorkDir   string
	PidsLimit int
}

// decodeTaskConfig reads a task's config and checks it against the plugin's
// policy, so that a job the operator did not allow fails with the key named.
func decodeTaskConfig(m map[string]any, pc pluginConfig) (taskConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	tc := taskConfig{
		Command:   dec.RequiredString("command"),
		Args:      dec.StringSlice("args"),
		PidMode:   dec.String("pid_mode"),
		IpcMode:   dec.String("ipc_mode"),
		CapAdd:    dec.StringSlice("cap_add"),
		CapDrop:   dec.StringSlice("cap_drop"),
		WorkDir:   dec.String("work_dir"),
		PidsLimit: dec.Int("pids_limit"),
	}
	if err := dec.Err(); err != nil {
		return tc, err
	}
	if err := checkMode("pid_mode", &tc.PidMode, pc.DefaultPidMode); err != nil {
		return tc, err
	}
	if err := checkMode("ipc_mode", &tc.IpcMode, pc.DefaultIpcMode); err != nil {
		return tc, err
	}
	if tc.WorkDir == "" {
		tc.WorkDir = "/"
	}
	if !path.IsAbs(tc.WorkDir) {
		return tc, &drivers.ConfigError{Key: "work_dir", Err: fmt.Errorf("must be an absolute path inside the task's chroot, got %q", tc.WorkDir)}
	}
	if tc.PidsLimit < 0 {
		return tc, &drivers.ConfigError{Key: "pids_limit", Err: fmt.Errorf("must not be negative, got %d", tc.PidsLimit)}
	}
	var err error
	if tc.CapAdd, err = normalizeCaps(tc.CapAdd, false); err != nil {
		return tc, &drivers.ConfigError{Key: "cap_add", Err: err}
	}
	if tc.CapDrop, err = normalizeCaps(tc.CapDrop, true); err != nil {
		return tc, &drivers.ConfigError{Key: "cap_drop", Err: err}
	}
	for _, c := range tc.CapAdd {
		if !slices.Contains(pc.AllowCaps, c) {
			return tc, &drivers.ConfigError{Key: "cap_add", Err: fmt.Errorf("capability %q is not in the plugin's allow_caps", c)}
		}
	}
	return tc, nil
}

// checkMode applies the plugin's default to a namespace mode and refuses
// "host" unless the plugin's default is "host": sharing the host's
// namespace is the operator's decision, not the job's.
func checkMode(key string, v *string, def string) error {
	if *v == "" {
		*v = def
	}
	switch {
	case *v != modePrivate && *v != modeHost:
		return &drivers.ConfigError{Key: key, Err: fmt.Errorf("want %q or %q, got %q", modePrivate, modeHost, *v)}
	case *v == modeHost && def != modeHost:
		return &drivers.ConfigError{Key: key, Err: fmt.Errorf("%q is not allowed: the plugin's default_%s is %q", modeHost, key, def)}
	}
	return nil
}

// normalizeCaps lower-cases capability names, strips "cap_", and refuses
// names the kernel does not have. "all" is allowed only where it makes
// sense (cap_drop).
func normalizeCaps(in []string, allowAll bool) ([]string, error) {
	out := make([]string, 0, len(in))
	for _, c := range in {
		n := strings.TrimPrefix(strings.ToLower(strings.TrimSpace(c)), "cap_")
		if n == "all" && allowAll {
			out = append(out, n)
			continue
		}
		if _, ok := capNumber(n); !ok {
			return nil, fmt.Errorf("unknown capability %q", c)
		}
		out = append(out, n)
	}
	return out, nil
}

// taskCaps is the task's capability bounding set: the default set (as far
// as the plugin allows it), minus cap_drop, plus cap_add. A wider
// allow_caps lets jobs ask for more; it does not give every task more.
func taskCaps(pc pluginConfig, tc taskConfig) []string {
	var set []string
	if !slices.Contains(tc.CapDrop, "all") {
		for _, c := range defaultAllowCaps {
			if slices.Contains(pc.AllowCaps, c) && !slices.Contains(tc.CapDrop, c) {
				set = append(set, c)
			}
		}
	}
	set = append(set, tc.CapAdd...)
	slices.Sort(set)
	return slices.Compact(set)
}

// checkChrootEnv refuses a client chroot_env entry that is not a pair of
// absolute paths, or that would hide the task's own directories.
func checkChrootEnv(env map[string]string) error {
	for _, src := range slices.Sorted(maps.Keys(env)) {
		dst := env[src]
		if !path.IsAbs(src) || !path.IsAbs(dst) {
			return fmt.Errorf("client chroot_env %q = %q: both must be absolute paths", src, dst)
		}
		switch path.Clean(dst) {
		case "/", "/alloc", "/local", "/secrets", "/tmp", "/proc", "/dev":
			return fmt.Errorf("client chroot_env %q = %q: %s is the task's own", src, dst, path.Clean(dst))
		}
	}
	return nil
}
