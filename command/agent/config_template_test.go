package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestParseConfig_ClientTemplate checks every template key we honour
// parses, in HCL and JSON, reaches the client, that upstream's defaults
// fill what is unset, and that a later file wins key by key.
func TestParseConfig_ClientTemplate(t *testing.T) {
	for name, src := range map[string]string{
		"agent.hcl": `
client {
  template {
    function_denylist    = ["env", "file"]
    disable_file_sandbox = true
    max_stale            = "10s"
    block_query_wait     = "1m"
    wait {
      min = "2s"
      max = "20s"
    }
    wait_bounds {
      min = "1s"
      max = "1m"
    }
    nomad_retry {
      attempts    = 0
      backoff     = "500ms"
      max_backoff = "30s"
    }
  }
}
`,
		"agent.json": `{"client": {"template": {"function_denylist": ["env", "file"], "disable_file_sandbox": true,
  "max_stale": "10s", "block_query_wait": "1m", "wait": {"min": "2s", "max": "20s"},
  "wait_bounds": {"min": "1s", "max": "1m"}, "nomad_retry": {"attempts": 0, "backoff": "500ms", "max_backoff": "30s"}}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			c, err := ParseConfig(name, []byte(src))
			must.NoError(t, err)
			got := DefaultConfig().Merge(c).Client.Template.clientConfig()
			must.Eq(t, &template.ClientConfig{
				FunctionDenylist: []string{"env", "file"}, DisableFileSandbox: true,
				MaxStale: 10 * time.Second, BlockQueryWait: time.Minute,
				Wait:         &structs.TemplateWait{Min: 2 * time.Second, Max: 20 * time.Second},
				WaitBounds:   &structs.TemplateWait{Min: time.Second, Max: time.Minute},
				RetryBackoff: 500 * time.Millisecond, RetryMaxBackoff: 30 * time.Second,
			}, got)
		})
	}

	def := DefaultConfig().Client.Template.clientConfig()
	must.Eq(t, template.DefaultClientConfig(), *def)
	must.Eq(t, []string{"plugin", "writeToFile"}, def.FunctionDenylist)

	first, err := ParseConfig("a.hcl", []byte("client {\n  template {\n    max_stale = \"5s\"\n    wait {\n      min = \"1s\"\n    }\n  }\n}\n"))
	must.NoError(t, err)
	later, err := ParseConfig("b.hcl", []byte("client {\n  template {\n    block_query_wait = \"2m\"\n    wait {\n      max = \"9s\"\n    }\n  }\n}\n"))
	must.NoError(t, err)
	got := DefaultConfig().Merge(first).Merge(later).Client.Template.clientConfig()
	must.Eq(t, 5*time.Second, got.MaxStale)
	must.Eq(t, 2*time.Minute, got.BlockQueryWait)
	must.Eq(t, &structs.TemplateWait{Min: time.Second, Max: 9 * time.Second}, got.Wait)
}

// TestParseConfig_ClientTemplateRefused checks that the Consul and Vault
// retry blocks, upstream's deprecated function_blacklist and a finite
// nomad_retry.attempts are refused by name with their position, as are a
// wait whose max is below its min and a denylist entry that names no
// function.
func TestParseConfig_ClientTemplateRefused(t *testing.T) {
	src := "client {\n  template {\n    consul_retry {\n      attempts = 3\n    }\n    vault_retry {\n      attempts = 3\n    }\n" +
		"    function_blacklist = [\"plugin\"]\n    nomad_retry {\n      attempts = 12\n    }\n" +
		"    wait {\n      min = \"10s\"\n      max = \"1s\"\n    }\n    function_denylist = [\"not-a-name\"]\n  }\n}\n"
	_, err := ParseConfig("agent.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	must.StrContains(t, msg, "agent.hcl:3:5: client.template.consul_retry is not supported by this version; there is no Consul integration")
	must.StrContains(t, msg, "agent.hcl:6:5: client.template.vault_retry is not supported by this version; there is no Vault integration")
	must.StrContains(t, msg, "agent.hcl:9:5: client.template.function_blacklist is not supported by this version; upstream's deprecated name")
	must.StrContains(t, msg, "agent.hcl:11:18: client.template.nomad_retry.attempts = 12 is not supported by this version")
	must.StrContains(t, msg, "agent.hcl:13:5: client.template.wait: max (1s) must not be below min (10s)")
	must.StrContains(t, msg, `client.template.function_denylist: "not-a-name" is not a function name`)
}
