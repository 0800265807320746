package docker

import (
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// Defaults of the plugin config, as upstream's.
const (
	defaultEndpoint            = "unix:///var/run/docker.sock"
	defaultImageDelay          = 3 * time.Minute
	defaultPullActivityTimeout = 2 * time.Minute
)

// pluginConfig is the agent's `plugin "docker" { config { ... } }` block.
type pluginConfig struct {
	Endpoint            string
	AllowPrivileged     bool
	VolumesEnabled      bool
	GCImage             bool
	GCImageDelay        time.Duration
	GCContainer         bool
	PullActivityTimeout time.Duration
}

func decodePluginConfig(m map[string]any) (pluginConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	pc := pluginConfig{
		Endpoint:            dec.String("endpoint"),
		AllowPrivileged:     dec.Bool("allow_privileged"),
		VolumesEnabled:      true,
		GCImage:             true,
		GCImageDelay:        defaultImageDelay,
		GCContainer:         true,
		PullActivityTimeout: dec.Duration("pull_activity_timeout"),
	}
	if vol, ok := block(dec, "volumes"); ok {
		sub(dec, "volumes", vol, func(d *drivers.ConfigDecoder) {
			if d.Has("enabled") {
				pc.VolumesEnabled = d.Bool("enabled")
			}
		})
	}
	if gc, ok := block(dec, "gc"); ok {
		sub(dec, "gc", gc, func(d *drivers.ConfigDecoder) {
			if d.Has("image") {
				pc.GCImage = d.Bool("image")
			}
			if d.Has("image_delay") {
				pc.GCImageDelay = d.Duration("image_delay")
			}
			if d.Has("container") {
				pc.GCContainer = d.Bool("container")
			}
		})
	}
	if pc.Endpoint == "" {
		pc.Endpoint = defaultEndpoint
	}
	if pc.PullActivityTimeout == 0 {
		pc.PullActivityTimeout = defaultPullActivityTimeout
	}
	return pc, dec.Err()
}

// taskConfig is the decoded `config` block of a docker task.
type taskConfig struct {
	Image       string
	Load        string
	Command     string
	Args        []string
	Entrypoint  []string
	Ports       []string
	Volumes     []string
	Mounts      []mountConfig
	Labels      map[string]string
	Auth        *registryAuth
	ForcePull   bool
	NetworkMode string
	Privileged  bool
	Logging     *loggingConfig
	// Ulimits are the `ulimit` block's resource limits of the
	// container, by name (nofile, nproc...), sorted by name.
	Ulimits []ulimit
}

// ulimit is one limit of the `ulimit` block: "soft:hard", or one number
// for both, as upstream's.
type ulimit struct {
	Name       string
	Soft, Hard int64
}

// ulimitNames are the limits the engine knows (RLIMIT_*, lower case).
var ulimitNames = []string{"core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice",
	"nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"}

// parseUlimits decodes the `ulimit` block, naming the key of a bad one.
func parseUlimits(dec *drivers.ConfigDecoder, m map[string]string) []ulimit {
	var out []ulimit
	for _, name := range slices.Sorted(maps.Keys(m)) {
		key := "ulimit." + name
		if !slices.Contains(ulimitNames, name) {
			dec.Fail(key, fmt.Errorf("unknown limit; one of %s", strings.Join(ulimitNames, ", ")))
			continue
		}
		v := m[name]
		softS, hardS, both := strings.Cut(v, ":")
		if !both {
			hardS = softS
		}
		soft, err1 := strconv.ParseInt(softS, 10, 64)
		hard, err2 := strconv.ParseInt(hardS, 10, 64)
		switch {
		case err1 != nil || err2 != nil || soft < 0 || hard < 0:
			dec.Fail(key, fmt.Errorf("want \"soft:hard\" or one number, both non-negative integers, got %q", v))
		case soft > hard:
			dec.Fail(key, fmt.Errorf("the soft limit %d is above the hard limit %d", soft, hard))
		default:
			out = append(out, ulimit{Name: name, Soft: soft, Hard: hard})
		}
	}
	return out
}

// mountConfig is one `mount` block; only bind mounts are implemented.
type mountConfig struct {
	Type     string
	Source   string
	Target   string
	ReadOnly bool
}

// loggingConfig is the `logging` block: the engine's log driver.
type loggingConfig struct {
	Type   string
	Config map[string]string
}

// decodeTaskConfig reads a task's config and checks it against the plugin's
// policy, so that a job the operator did not allow fails with the key named.
func decodeTaskConfig(m map[string]any, pc pluginConfig) (taskConfig, error) {
	dec := drivers.NewConfigDecoder(m)
	tc := taskConfig{
		Image:       dec.RequiredString("image"),
		Load:        dec.String("load"),
		Command:     dec.String("command"),
		Args:        dec.StringSlice("args"),
		Entrypoint:  dec.StringSlice("entrypoint"),
		Ports:       dec.StringSlice("ports"),
		Volumes:     dec.StringSlice("volumes"),
		ForcePull:   dec.Bool("force_pull"),
		NetworkMode: dec.String("network_mode"),
		Privileged:  dec.Bool("privileged"),
		Labels:      stringMap(dec, "labels"),
	}
	for i, mb := range blocks(dec, "mount") {
		key := fmt.Sprintf("mount[%d]", i)
		var mc mountConfig
		sub(dec, key, mb, func(d *drivers.ConfigDecoder) {
			mc = mountConfig{Type: d.String("type"), Source: d.String("source"), Target: d.String("target"), ReadOnly: d.Bool("readonly")}
		})
		if mc.Type == "" {
			mc.Type = "bind"
		}
		switch {
		case mc.Type != "bind":
			dec.Fail(key+".type", fmt.Errorf("only %q mounts are supported, got %q", "bind", mc.Type))
		case mc.Target == "" || !strings.HasPrefix(mc.Target, "/"):
			dec.Fail(key+".target", fmt.Errorf("want an absolute path inside the container, got %q", mc.Target))
		case mc.Source == "":
			dec.Fail(key+".source", drivers.ErrMissingKey)
		}
		tc.Mounts = append(tc.Mounts, mc)
	}
	if ab, ok := block(dec, "auth"); ok {
		sub(dec, "auth", ab, func(d *drivers.ConfigDecoder) {
			tc.Auth = &registryAuth{Username: d.String("username"), Password: d.String("password"),
				Email: d.String("email"), ServerAddress: d.String("server_address")}
		})
	}
	if lb, ok := block(dec, "logging"); ok {
		sub(dec, "logging", lb, func(d *drivers.ConfigDecoder) {
			tc.Logging = &loggingConfig{Type: d.String("type"), Config: stringMap(d, "config")}
		})
	}
	if ub, ok := block(dec, "ulimit"); ok {
		limits := map[string]string{}
		for k, v := range ub {
			s, ok := v.(string)
			if !ok {
				dec.Fail("ulimit."+k, fmt.Errorf("want a string (\"soft:hard\"), got %T", v))
				continue
			}
			limits[k] = s
		}
		tc.Ulimits = parseUlimits(dec, limits)
	}
	if tc.Load != "" && (filepath.IsAbs(tc.Load) || !filepath.IsLocal(tc.Load)) {
		dec.Fail("load", fmt.Errorf("want a path inside the task directory (an artifact's destination), got %q", tc.Load))
	}
	if tc.Privileged && !pc.AllowPrivileged {
		dec.Fail("privileged", errors.New("privileged containers are not allowed: the plugin's allow_privileged is false"))
	}
	if (len(tc.Volumes) > 0 || len(tc.Mounts) > 0) && !pc.VolumesEnabled {
		dec.Fail("volumes", errors.New("host volumes and bind mounts are disabled by the plugin's volumes { enabled = false }"))
	}
	for _, v := range tc.Volumes {
		if parts := strings.Split(v, ":"); len(parts) < 2 || len(parts) > 3 || parts[0] == "" || !strings.HasPrefix(parts[1], "/") {
			dec.Fail("volumes", fmt.Errorf("want \"host_path:/container/path[:ro]\", got %q", v))
		}
	}
	return tc, dec.Err()
}

// block reads key as a single block: HCL writes blocks as a list of maps,
// JSON job files may write a plain object.
func block(dec *drivers.ConfigDecoder, key string) (map[string]any, bool) {
	l := blocks(dec, key)
	switch len(l) {
	case 0:
		return nil, false
	case 1:
		return l[0], true
	default:
		dec.Fail(key, fmt.Errorf("at most one %s block, got %d", key, len(l)))
		return nil, false
	}
}

// blocks reads key as a list of blocks.
func blocks(dec *drivers.ConfigDecoder, key string) []map[string]any {
	v, ok := dec.Raw(key)
	if !ok {
		return nil
	}
	switch b := v.(type) {
	case map[string]any:
		return []map[string]any{b}
	case []map[string]any:
		return b
	case []any:
		out := make([]map[string]any, 0, len(b))
		for i, e := range b {
			m, ok := e.(map[string]any)
			if !ok {
				dec.Fail(key, fmt.Errorf("element %d: want a block, got %T", i, e))
				return nil
			}
			out = append(out, m)
		}
		return out
	default:
		dec.Fail(key, fmt.Errorf("want a block, got %T", v))
		return nil
	}
}

// stringMap reads key as a map of strings, written either as an attribute
// (`labels = { a = "b" }`) or as a block (`labels { a = "b" }`).
func stringMap(dec *drivers.ConfigDecoder, key string) map[string]string {
	v, ok := dec.Raw(key)
	if !ok {
		return nil
	}
	var ms []map[string]any
	switch b := v.(type) {
	case map[string]any:
		ms = []map[string]any{b}
	case []map[string]any:
		ms = b
	case []any:
		for _, e := range b {
			m, ok := e.(map[string]any)
			if !ok {
				dec.Fail(key, fmt.Errorf("want a map of strings, got %T", e))
				return nil
			}
			ms = append(ms, m)
		}
	default:
		dec.Fail(key, fmt.Errorf("want a map of strings, got %T", v))
		return nil
	}
	out := map[string]string{}
	for _, m := range ms {
		d := drivers.NewConfigDecoder(m)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			out[k] = d.String(k)
		}
		if err := d.Err(); err != nil {
			dec.Fail(key, err)
		}
	}
	return out
}

// sub decodes a nested block with its own decoder and reports its problems
// under "parent.key", so that an unknown key inside `auth` is named as such.
func sub(dec *drivers.ConfigDecoder, parent string, m map[string]any, fn func(*drivers.ConfigDecoder)) {
	d := drivers.NewConfigDecoder(m)
	fn(d)
	err := d.Err()
	if err == nil {
		return
	}
	var list []error
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		list = j.Unwrap()
	} else {
		list = []error{err}
	}
	for _, e := range list {
		var ce *drivers.ConfigError
		if errors.As(e, &ce) {
			dec.Fail(parent+"."+ce.Key, ce.Err)
			continue
		}
		dec.Fail(parent, e)
	}
}
