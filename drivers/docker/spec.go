package docker

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/drivers"
)

// Labels the driver puts on every container, as upstream's, so that
// operators can filter `docker ps` and FindTask can find a task's container.
const (
	labelAllocID  = "com.hashicorp.nomad.alloc_id"
	labelTaskName = "com.hashicorp.nomad.task_name"
	labelJobName  = "com.hashicorp.nomad.job_name"
	labelGroup    = "com.hashicorp.nomad.task_group_name"
)

// containerSpec is the body of POST /containers/create.
type containerSpec struct {
	Image        string
	Hostname     string              `json:",omitempty"`
	User         string              `json:",omitempty"`
	Cmd          []string            `json:",omitempty"`
	Entrypoint   []string            `json:",omitempty"`
	Env          []string            `json:",omitempty"`
	Labels       map[string]string   `json:",omitempty"`
	ExposedPorts map[string]struct{} `json:",omitempty"`
	HostConfig   hostConfig
}

type hostConfig struct {
	Binds             []string                 `json:",omitempty"`
	PortBindings      map[string][]portBinding `json:",omitempty"`
	NetworkMode       string                   `json:",omitempty"`
	Privileged        bool                     `json:",omitempty"`
	CPUShares         int64                    `json:"CpuShares,omitempty"`
	Memory            int64                    `json:",omitempty"`
	MemorySwap        int64                    `json:",omitempty"`
	MemoryReservation int64                    `json:",omitempty"`
	LogConfig         *logConfig               `json:",omitempty"`
	Ulimits           []engineUlimit           `json:",omitempty"`
}

// engineUlimit is one of the engine's HostConfig.Ulimits.
type engineUlimit struct {
	Name string
	Soft int64
	Hard int64
}

type portBinding struct {
	HostIP   string `json:"HostIp"`
	HostPort string
}

type logConfig struct {
	Type   string
	Config map[string]string `json:",omitempty"`
}

// containerName is upstream's "<task>-<alloc ID>", unique per node.
func containerName(cfg *drivers.TaskConfig) string {
	return cfg.Name + "-" + cfg.AllocID
}

// buildSpec turns a task into the engine's container spec.
func buildSpec(cfg *drivers.TaskConfig, tc taskConfig, imageID string) (*containerSpec, error) {
	spec := &containerSpec{
		Image:      imageID,
		Entrypoint: tc.Entrypoint,
		Env:        sortedEnv(cfg.Env),
		Labels:     maps.Clone(tc.Labels),
		User:       cfg.User,
		Hostname:   cfg.Hostname,
	}
	if spec.Labels == nil {
		spec.Labels = map[string]string{}
	}
	maps.Copy(spec.Labels, map[string]string{
		labelAllocID: cfg.AllocID, labelTaskName: cfg.Name,
		labelJobName: cfg.JobName, labelGroup: cfg.TaskGroupName,
	})
	switch {
	case tc.Command != "":
		spec.Cmd = append([]string{tc.Command}, tc.Args...)
	case len(tc.Args) > 0:
		spec.Cmd = tc.Args
	}
	hc := &spec.HostConfig
	hc.NetworkMode = tc.NetworkMode
	hc.Privileged = tc.Privileged
	hc.CPUShares = int64(cfg.Resources.CPUShares)
	if mem := cfg.Resources.MemoryMB; mem > 0 {
		hc.Memory = int64(mem) << 20
		if max := cfg.Resources.MemoryMaxMB; max > mem {
			hc.MemoryReservation = hc.Memory
			hc.Memory = int64(max) << 20
		}
		// No swap beyond the limit: a task over its memory is killed,
		// not slowed down for every other task on the node.
		hc.MemorySwap = hc.Memory
	}
	if tc.Logging != nil && tc.Logging.Type != "" {
		hc.LogConfig = &logConfig{Type: tc.Logging.Type, Config: tc.Logging.Config}
	}
	for _, u := range tc.Ulimits {
		hc.Ulimits = append(hc.Ulimits, engineUlimit(u))
	}
	for host, inside := range map[string]string{cfg.AllocDir: "/alloc", cfg.LocalDir: "/local", cfg.SecretsDir: "/secrets"} {
		if host != "" {
			hc.Binds = append(hc.Binds, host+":"+inside)
		}
	}
	for _, v := range tc.Volumes {
		parts := strings.SplitN(v, ":", 2)
		src := parts[0]
		if !filepath.IsAbs(src) {
			// Relative host paths are relative to the task directory,
			// as upstream's, so a job cannot name the agent's cwd.
			src = filepath.Join(cfg.TaskDir, src)
		}
		hc.Binds = append(hc.Binds, src+":"+parts[1])
	}
	for _, m := range tc.Mounts {
		b := m.Source + ":" + m.Target
		if m.ReadOnly {
			b += ":ro"
		}
		hc.Binds = append(hc.Binds, b)
	}
	hc.Binds = append(hc.Binds, hostVolumeBinds(cfg.Mounts)...)
	// The group's network.dns and network.hostname, over the engine's
	// own files.
	for _, f := range []struct{ host, inside string }{{cfg.ResolvConfPath, "/etc/resolv.conf"}, {cfg.HostsPath, "/etc/hosts"}} {
		if f.host != "" {
			hc.Binds = append(hc.Binds, f.host+":"+f.inside+":ro")
		}
	}
	slices.Sort(hc.Binds)
	if err := bindPorts(spec, cfg.Ports, tc.Ports); err != nil {
		return nil, err
	}
	return spec, nil
}

// bindPorts publishes the group ports the task names in `ports`.
func bindPorts(spec *containerSpec, ports []drivers.Port, labels []string) error {
	for _, l := range labels {
		i := slices.IndexFunc(ports, func(p drivers.Port) bool { return p.Label == l })
		if i < 0 {
			return &drivers.ConfigError{Key: "ports", Err: fmt.Errorf("port %q is not in the group's network block", l)}
		}
		p := ports[i]
		to := p.To
		if to <= 0 {
			to = p.Value
		}
		if spec.ExposedPorts == nil {
			spec.ExposedPorts = map[string]struct{}{}
			spec.HostConfig.PortBindings = map[string][]portBinding{}
		}
		for _, proto := range []string{"tcp", "udp"} {
			k := strconv.Itoa(to) + "/" + proto
			spec.ExposedPorts[k] = struct{}{}
			spec.HostConfig.PortBindings[k] = append(spec.HostConfig.PortBindings[k], portBinding{HostIP: p.HostIP, HostPort: strconv.Itoa(p.Value)})
		}
	}
	return nil
}

func sortedEnv(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
