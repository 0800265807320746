package agent

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/shoenig/test/must"
)

// server.authoritative_region and acl.replication_token reach the server's
// config; a server of a region that copies its ACLs without the token is
// refused naming the key, and /v1/agent/self never shows the token.
func TestParseConfig_ACLReplication(t *testing.T) {
	src := `region = "europe"
data_dir = "/tmp/eu"
server {
  enabled              = true
  authoritative_region = "global"
}
acl {
  enabled           = true
  replication_token = "6f2e2a8c-2b1c-4a3e-9d7e-0c1f2a3b4c5d"
}
`
	cfg, err := ParseConfig("eu.hcl", []byte(src))
	must.NoError(t, err)
	cfg = DefaultConfig().Merge(cfg)
	must.Eq(t, "global", cfg.Server.AuthoritativeRegion)
	must.Eq(t, "6f2e2a8c-2b1c-4a3e-9d7e-0c1f2a3b4c5d", cfg.ACL.ReplicationToken)
	must.NoError(t, cfg.Validate())
	sc, err := (&Agent{config: cfg, logger: hclog.NewNullLogger()}).serverConfig(net.ParseIP("127.0.0.1"))
	must.NoError(t, err)
	must.Eq(t, "global", sc.AuthoritativeRegion)
	must.Eq(t, "6f2e2a8c-2b1c-4a3e-9d7e-0c1f2a3b4c5d", sc.ReplicationToken)
	shown, err := json.Marshal(cfg)
	must.NoError(t, err)
	must.StrNotContains(t, string(shown), "6f2e2a8c")

	cfg.ACL.ReplicationToken = ""
	must.ErrorContains(t, cfg.Validate(), `acl.replication_token is required: this server's region "europe" copies its ACLs from server.authoritative_region "global"`)
	cfg.Server.AuthoritativeRegion = "europe"
	must.NoError(t, cfg.Validate(), must.Sprint("the authoritative region itself needs no token"))
}
