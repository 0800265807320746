package agent

import (
	"testing"

	"github.com/shoenig/test/must"
)

// client.options keys are checked when the file is read: an unknown key,
// an upstream option this version cannot honour and a driver list naming
// no driver are each refused by name at the options map, so that none is
// accepted without effect; the keys it honours load.
func TestParseConfig_ClientOptionsChecked(t *testing.T) {
	_, err := ParseConfig("agent.hcl", []byte(`client {
  options = {
    "driver.denylist"       = "raw_exec,dockr"
    "fingerprint.allowlist" = "cpu"
  }
}
`))
	must.ErrorContains(t, err, `agent.hcl:2:13: client.options: "fingerprint.allowlist" is not supported by this version`)
	must.ErrorContains(t, err, `agent.hcl:2:13: client.options: driver.denylist names driver "dockr", which does not exist`)

	c, err := ParseConfig("agent.json", []byte(`{"client": {"options": {"driver.denylist": "raw_exec", "user.denylist": "root,admin"}}}`))
	must.NoError(t, err)
	must.Eq(t, "raw_exec", c.Client.Options["driver.denylist"])

	// A config built in code (not read from a file) is checked by Validate.
	cfg := DevConfig()
	cfg.Client.Options = map[string]string{"gc.interval": "1m"}
	must.ErrorContains(t, cfg.Validate(), `client.options: unknown option "gc.interval"`)
}
