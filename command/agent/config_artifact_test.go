package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/getter"
)

// TestParseConfig_ClientArtifact checks every artifact key we honour
// parses, in HCL and JSON, reaches the client, and that a later file wins
// key by key.
func TestParseConfig_ClientArtifact(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl": `
client {
  artifact {
    http_read_timeout              = "5m"
    http_max_size                  = "1GB"
    git_timeout                    = "2m"
    decompression_size_limit       = "512MiB"
    decompression_file_count_limit = 100
    disable_filesystem_isolation   = true
    cache_size_limit               = "2GiB"
  }
}
`,
		"agent.json": `{"client": {"artifact": {"http_read_timeout": "5m", "http_max_size": "1GB", "git_timeout": "2m",
  "decompression_size_limit": "512MiB", "decompression_file_count_limit": 100,
  "disable_filesystem_isolation": true, "cache_size_limit": "2GiB"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			got := DefaultConfig().Merge(c).Client.Artifact.clientConfig()
			must.Eq(t, &client.ArtifactConfig{
				Config: getter.Config{
					HTTPReadTimeout: 5 * time.Minute, HTTPMaxSize: 1e9, GitTimeout: 2 * time.Minute,
					DecompressionSizeLimit: 512 << 20, DecompressionFileCountLimit: 100,
					DisableFilesystemIsolation: true,
				},
				CacheSizeLimit: 2 << 30,
			}, got)
		})
	}

	later, err := ParseConfig("b.hcl", []byte("client {\n  artifact {\n    git_timeout = \"1m\"\n    cache_size_limit = \"0\"\n  }\n}\n"))
	must.NoError(t, err)
	first, err := ParseConfig("a.hcl", []byte("client {\n  artifact {\n    http_max_size = \"10MB\"\n  }\n}\n"))
	must.NoError(t, err)
	got := DefaultConfig().Merge(first).Merge(later).Client.Artifact.clientConfig()
	must.Eq(t, int64(10e6), got.HTTPMaxSize)
	must.Eq(t, time.Minute, got.GitTimeout)
	must.Eq(t, 30*time.Minute, got.HTTPReadTimeout)
	must.Eq(t, int64(-1), got.CacheSizeLimit) // 0 turns the cache off
}

// TestParseConfig_ClientArtifactDefaults checks a client without the
// block gets upstream's limits and the default cache.
func TestParseConfig_ClientArtifactDefaults(t *testing.T) {
	got := DefaultConfig().Client.Artifact.clientConfig()
	must.Eq(t, getter.DefaultConfig(), got.Config)
	must.Eq(t, int64(0), got.CacheSizeLimit)
}

// TestParseConfig_ClientArtifactRefused checks the keys of getters this
// client does not build in are refused by name with their position, and a
// bad size names its key.
func TestParseConfig_ClientArtifactRefused(t *testing.T) {
	src := "client {\n  artifact {\n    s3_timeout = \"1m\"\n    gcs_timeout = \"1m\"\n    hg_timeout = \"1m\"\n" +
		"    set_environment_variables = \"HTTP_PROXY\"\n    http_max_size = \"lots\"\n    bogus = 1\n  }\n}\n"
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	must.StrContains(t, msg, "agent.hcl:3:5: client.artifact.s3_timeout is not supported by this version; the s3 getter")
	must.StrContains(t, msg, "agent.hcl:4:5: client.artifact.gcs_timeout is not supported by this version")
	must.StrContains(t, msg, "agent.hcl:5:5: client.artifact.hg_timeout is not supported by this version")
	must.StrContains(t, msg, "agent.hcl:6:5: client.artifact.set_environment_variables is not supported by this version")
	must.StrContains(t, msg, `agent.hcl:7:21: client.artifact.http_max_size: invalid size "lots"`)
	must.StrContains(t, msg, `agent.hcl:8:5:`)
}

// TestParseSize checks the size forms upstream's files use and a few
// binary ones.
func TestParseSize(t *testing.T) {
	for s, want := range map[string]int64{"0": 0, "100GB": 100e9, "1.5MB": 1.5e6, "512MiB": 512 << 20, "10k": 10e3, "7": 7, "3 B": 3} {
		got, err := parseSize(s)
		must.NoError(t, err, must.Sprint(s))
		must.Eq(t, want, got, must.Sprint(s))
	}
	for _, s := range []string{"", "-1GB", "GB", "1XB", "1e400"} {
		_, err := parseSize(s)
		must.Error(t, err, must.Sprint(s))
	}
}
