package agent

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// server.client_introduction, upstream's block, is read and reaches the
// server; a mode it does not know is refused naming the key. It used to be
// refused as unsupported.
func TestConfig_ClientIntroduction(t *testing.T) {
	c, err := ParseConfig("agent.hcl", []byte(`server {
  client_introduction {
    enforcement          = "strict"
    default_identity_ttl = "2m"
    max_identity_ttl     = "10m"
  }
}
`))
	must.NoError(t, err)
	must.Eq(t, &structs.ClientIntroductionConfig{Enforcement: "strict", DefaultTTL: 2 * time.Minute, MaxTTL: 10 * time.Minute}, c.Server.ClientIntroduction)

	_, err = ParseConfig("agent.hcl", []byte("server {\n  client_introduction {\n    enforcement = \"hard\"\n  }\n}\n"))
	must.ErrorContains(t, err, "server.client_introduction.enforcement")
}
