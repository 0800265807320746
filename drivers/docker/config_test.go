package docker

import (
	"errors"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

func defaultPlugin(t *testing.T) pluginConfig {
	t.Helper()
	pc, err := decodePluginConfig(nil)
	must.NoError(t, err)
	return pc
}

// TestDecodePluginConfig checks upstream's defaults and the nested blocks
// as HCL hands them over (a list of one map).
func TestDecodePluginConfig(t *testing.T) {
	pc := defaultPlugin(t)
	must.Eq(t, defaultEndpoint, pc.Endpoint)
	must.True(t, pc.GCImage)
	must.True(t, pc.GCContainer)
	must.True(t, pc.VolumesEnabled)
	must.Eq(t, defaultImageDelay, pc.GCImageDelay)

	pc, err := decodePluginConfig(map[string]any{
		"endpoint":              "unix:///run/podman/podman.sock",
		"allow_privileged":      true,
		"volumes":               []any{map[string]any{"enabled": false}},
		"gc":                    []any{map[string]any{"image": false, "image_delay": "1h", "container": false}},
		"pull_activity_timeout": "30s",
	})
	must.NoError(t, err)
	must.Eq(t, "unix:///run/podman/podman.sock", pc.Endpoint)
	must.True(t, pc.AllowPrivileged)
	must.False(t, pc.VolumesEnabled)
	must.False(t, pc.GCImage)
	must.False(t, pc.GCContainer)
	must.Eq(t, "1h0m0s", pc.GCImageDelay.String())
	must.Eq(t, "30s", pc.PullActivityTimeout.String())
}

// TestDecodePluginConfig_UnknownKeys checks that a misspelt option, at the
// top or inside a block, is refused by its full name instead of ignored.
func TestDecodePluginConfig_UnknownKeys(t *testing.T) {
	_, err := decodePluginConfig(map[string]any{"gc": []any{map[string]any{"imagee": true}}, "endpont": "x"})
	must.ErrorIs(t, err, drivers.ErrUnknownKey)
	must.StrContains(t, err.Error(), `"gc.imagee"`)
	must.StrContains(t, err.Error(), `"endpont"`)
}

// TestDecodeTaskConfig checks the common keys of upstream's docker task
// config, in the shapes HCL produces.
func TestDecodeTaskConfig(t *testing.T) {
	tc, err := decodeTaskConfig(map[string]any{
		"image":        "redis:7",
		"command":      "redis-server",
		"args":         []any{"--port", "6379"},
		"entrypoint":   []any{"/bin/sh", "-c"},
		"ports":        []any{"db"},
		"volumes":      []any{"local/data:/data", "/etc/ssl:/etc/ssl:ro"},
		"mount":        []any{map[string]any{"type": "bind", "source": "/srv", "target": "/srv", "readonly": true}},
		"labels":       []any{map[string]any{"team": "edge"}},
		"auth":         []any{map[string]any{"username": "u", "password": "p", "server_address": "r.example"}},
		"force_pull":   true,
		"network_mode": "host",
		"logging":      []any{map[string]any{"type": "json-file", "config": []any{map[string]any{"max-size": "10m"}}}},
		"ulimit":       []any{map[string]any{"nofile": "1024:2048", "nproc": "512"}},
	}, defaultPlugin(t))
	must.NoError(t, err)
	must.Eq(t, "redis:7", tc.Image)
	must.Eq(t, []string{"--port", "6379"}, tc.Args)
	must.Eq(t, []string{"db"}, tc.Ports)
	must.Eq(t, map[string]string{"team": "edge"}, tc.Labels)
	must.Eq(t, "r.example", tc.Auth.ServerAddress)
	must.Eq(t, []mountConfig{{Type: "bind", Source: "/srv", Target: "/srv", ReadOnly: true}}, tc.Mounts)
	must.Eq(t, "10m", tc.Logging.Config["max-size"])
	must.True(t, tc.ForcePull)
	must.Eq(t, []ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}, {Name: "nproc", Soft: 512, Hard: 512}}, tc.Ulimits)
}

// TestDecodeTaskConfig_Refusals checks that each mistake or forbidden ask
// fails with the key named.
func TestDecodeTaskConfig_Refusals(t *testing.T) {
	noVolumes := defaultPlugin(t)
	noVolumes.VolumesEnabled = false
	cases := []struct {
		name string
		cfg  map[string]any
		pc   pluginConfig
		key  string
	}{
		{"missing image", map[string]any{}, defaultPlugin(t), `"image"`},
		{"unknown key", map[string]any{"image": "x", "port_map": []any{}}, defaultPlugin(t), `"port_map"`},
		{"unknown auth key", map[string]any{"image": "x", "auth": []any{map[string]any{"user": "u"}}}, defaultPlugin(t), `"auth.user"`},
		{"privileged", map[string]any{"image": "x", "privileged": true}, defaultPlugin(t), `"privileged"`},
		{"volume mount type", map[string]any{"image": "x", "mount": []any{map[string]any{"type": "volume", "target": "/x"}}}, defaultPlugin(t), `"mount[0].type"`},
		{"relative target", map[string]any{"image": "x", "mount": []any{map[string]any{"source": "/a", "target": "x"}}}, defaultPlugin(t), `"mount[0].target"`},
		{"bad volume", map[string]any{"image": "x", "volumes": []any{"/only-host"}}, defaultPlugin(t), `"volumes"`},
		{"volumes disabled", map[string]any{"image": "x", "volumes": []any{"/a:/b"}}, noVolumes, `"volumes"`},
		{"two auth blocks", map[string]any{"image": "x", "auth": []any{map[string]any{}, map[string]any{}}}, defaultPlugin(t), `"auth"`},
		{"unknown ulimit", map[string]any{"image": "x", "ulimit": []any{map[string]any{"files": "1"}}}, defaultPlugin(t), `"ulimit.files"`},
		{"bad ulimit value", map[string]any{"image": "x", "ulimit": []any{map[string]any{"nofile": "lots"}}}, defaultPlugin(t), `"ulimit.nofile"`},
		{"soft above hard", map[string]any{"image": "x", "ulimit": []any{map[string]any{"nproc": "10:5"}}}, defaultPlugin(t), `"ulimit.nproc"`},
		{"ulimit not a string", map[string]any{"image": "x", "ulimit": []any{map[string]any{"nofile": 5}}}, defaultPlugin(t), `"ulimit.nofile"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeTaskConfig(tc.cfg, tc.pc)
			must.ErrorIs(t, err, drivers.ErrInvalidConfig)
			must.StrContains(t, err.Error(), tc.key)
		})
	}
}

// TestBuildSpec checks the resource limits and mounts a container gets:
// memory_max becomes the hard limit with memory as the reservation, and the
// task directories appear where the client's environment says they are.
func TestBuildSpec(t *testing.T) {
	cfg := &drivers.TaskConfig{
		ID: "a/web", Name: "web", AllocID: "a", TaskDir: "/d/web", AllocDir: "/d/alloc", LocalDir: "/d/web/local", SecretsDir: "/d/web/secrets",
		Resources: drivers.Resources{CPUShares: 500, MemoryMB: 128, MemoryMaxMB: 256},
		Ports:     []drivers.Port{{Label: "http", Value: 23456, To: 8080}, {Label: "admin", Value: 23457, HostIP: "192.168.7.2"}},
	}
	tc := taskConfig{Image: "x", Args: []string{"-v"}, Volumes: []string{"data:/data"}, Ports: []string{"http", "admin"}}
	spec, err := buildSpec(cfg, tc, "sha256:abc")
	must.NoError(t, err)
	must.Eq(t, []string{"-v"}, spec.Cmd)
	must.Eq(t, int64(500), spec.HostConfig.CPUShares)
	must.Eq(t, int64(256<<20), spec.HostConfig.Memory)
	must.Eq(t, int64(128<<20), spec.HostConfig.MemoryReservation)
	must.Eq(t, []string{"/d/alloc:/alloc", "/d/web/data:/data", "/d/web/local:/local", "/d/web/secrets:/secrets"}, spec.HostConfig.Binds)
	must.Eq(t, "23456", spec.HostConfig.PortBindings["8080/tcp"][0].HostPort)
	must.Eq(t, "23457", spec.HostConfig.PortBindings["23457/tcp"][0].HostPort)
	// A port of a host network of its own is published on its address only.
	must.Eq(t, "192.168.7.2", spec.HostConfig.PortBindings["23457/tcp"][0].HostIP)
	must.Eq(t, "", spec.HostConfig.PortBindings["8080/tcp"][0].HostIP)
	must.Eq(t, "a", spec.Labels[labelAllocID])
	must.SliceEmpty(t, spec.HostConfig.Ulimits)
	spec, err = buildSpec(cfg, taskConfig{Image: "x", Ulimits: []ulimit{{Name: "nofile", Soft: 1024, Hard: 2048}}}, "x")
	must.NoError(t, err)
	must.Eq(t, []engineUlimit{{Name: "nofile", Soft: 1024, Hard: 2048}}, spec.HostConfig.Ulimits)

	_, err = buildSpec(cfg, taskConfig{Image: "x", Ports: []string{"nope"}}, "x")
	var ce *drivers.ConfigError
	must.True(t, errors.As(err, &ce))
	must.Eq(t, "ports", ce.Key)
}

// TestSplitRef checks that a registry port is not taken for a tag.
func TestSplitRef(t *testing.T) {
	for in, want := range map[string][2]string{
		"redis":                   {"redis", "latest"},
		"redis:7":                 {"redis", "7"},
		"reg:5000/app":            {"reg:5000/app", "latest"},
		"reg:5000/app:v1":         {"reg:5000/app", "v1"},
		"app@sha256:0123456789ab": {"app", "sha256:0123456789ab"},
	} {
		repo, tag := splitRef(in)
		must.Eq(t, want, [2]string{repo, tag}, must.Sprint(in))
	}
}
