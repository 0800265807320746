package command

import (
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/cli"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent"
	"github.com/nomad-edge/nomad/command/agent/agenttest"
)

func tlsCACreate(m Meta) cli.Command   { return &TLSCACreateCommand{Meta: m} }
func tlsCertCreate(m Meta) cli.Command { return &TLSCertCreateCommand{Meta: m} }

// runLocal runs a command that talks to no agent.
func runLocal(t *testing.T, cmd func(Meta) cli.Command, args ...string) (int, string, string) {
	t.Helper()
	ui := cli.NewMockUi()
	code := cmd(Meta{Ui: ui}).Run(args)
	return code, ui.OutputWriter.String(), ui.ErrorWriter.String()
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	buf, err := os.ReadFile(path)
	must.NoError(t, err)
	b, _ := pem.Decode(buf)
	must.NotNil(t, b)
	c, err := x509.ParseCertificate(b.Bytes)
	must.NoError(t, err)
	return c
}

// The files of `nomad tls ca create` and `nomad tls cert create` have
// upstream's names and names inside, and secure an agent that the CLI
// then reaches with -ca-cert/-client-cert/-client-key or the NOMAD_*
// variables: the whole path an operator follows to turn on mTLS.
func TestTLS_CreateFilesAndUseThem(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, out, stderr := runLocal(t, tlsCACreate)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "nomad-agent-ca.pem")
	must.StrContains(t, out, "nomad-agent-ca-key.pem")
	fi, err := os.Stat("nomad-agent-ca-key.pem")
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o600), fi.Mode().Perm())

	// Never overwrite a CA: every certificate it signed would be orphaned.
	code, _, stderr = runLocal(t, tlsCACreate)
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "nomad-agent-ca.pem already exists")

	code, out, stderr = runLocal(t, tlsCertCreate, "-server", "-additional-dnsname", "nomad.example.com", "-additional-ipaddress", "10.0.0.5")
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "global-server-nomad.pem")
	must.StrContains(t, stderr+out, "WARNING")
	for _, role := range []string{"-client", "-cli"} {
		code, _, stderr = runLocal(t, tlsCertCreate, role)
		must.Eq(t, 0, code, must.Sprint(stderr))
	}
	code, _, stderr = runLocal(t, tlsCertCreate, "-server", "-client")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "exactly one of -server, -client or -cli")

	srv := readCert(t, "global-server-nomad.pem")
	must.Eq(t, []string{"server.global.nomad", "localhost", "nomad.example.com"}, srv.DNSNames)
	must.True(t, srv.IPAddresses[0].Equal(net.ParseIP("127.0.0.1")))
	must.True(t, srv.IPAddresses[1].Equal(net.ParseIP("10.0.0.5")))
	must.Eq(t, []string{"client.global.nomad", "localhost"}, readCert(t, "global-client-nomad.pem").DNSNames)
	must.Eq(t, []string{"cli.global.nomad", "localhost"}, readCert(t, "global-cli-nomad.pem").DNSNames)

	path := func(name string) string { return filepath.Join(dir, name) }
	a := agenttest.NewDevAgent(t, func(c *agent.Config) {
		c.TLSConfig = &agent.TLSConfig{
			EnableHTTP: true, EnableRPC: true, VerifyServerHostname: true, VerifyHTTPSClient: true,
			CAFile: path("nomad-agent-ca.pem"), CertFile: path("global-server-nomad.pem"), KeyFile: path("global-server-nomad-key.pem"),
		}
	})
	tlsFlags := []string{"-ca-cert", path("nomad-agent-ca.pem"), "-client-cert", path("global-cli-nomad.pem"), "-client-key", path("global-cli-nomad-key.pem")}

	code, out, stderr = run(t, a, nodeStatus, tlsFlags...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "ready")

	jobFile := writeJob(t, "tls-cli", "mock_driver", `run_for = "1m"`)
	code, out, stderr = run(t, a, jobRun, append(tlsFlags, "-detach", jobFile)...)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "Evaluation ID")

	// Without a client certificate the agent refuses the CLI.
	code, _, _ = run(t, a, nodeStatus, "-ca-cert", path("nomad-agent-ca.pem"))
	must.Eq(t, 1, code)

	// The same through the environment, as an operator's shell profile.
	t.Setenv("NOMAD_CACERT", path("nomad-agent-ca.pem"))
	t.Setenv("NOMAD_CLIENT_CERT", path("global-cli-nomad.pem"))
	t.Setenv("NOMAD_CLIENT_KEY", path("global-cli-nomad-key.pem"))
	t.Setenv("NOMAD_TLS_SERVER_NAME", "localhost")
	code, out, stderr = run(t, a, nodeStatus)
	must.Eq(t, 0, code, must.Sprint(stderr))
	must.StrContains(t, out, "ready")

	// A server name the certificate does not carry fails verification;
	// -tls-skip-verify skips it (and is for testing only).
	code, _, stderr = run(t, a, nodeStatus, "-tls-server-name", "nomad.invalid")
	must.Eq(t, 1, code)
	must.StrContains(t, stderr, "certificate")
	code, _, stderr = run(t, a, nodeStatus, "-tls-server-name", "nomad.invalid", "-tls-skip-verify")
	must.Eq(t, 0, code, must.Sprint(stderr))
}

// The gossip key generator prints a key the agent accepts.
func TestOperatorGossipKeyringGenerate(t *testing.T) {
	code, out, stderr := runLocal(t, func(m Meta) cli.Command { return &OperatorGossipKeyringGenerateCommand{Meta: m} })
	must.Eq(t, 0, code, must.Sprint(stderr))
	cfg, err := agent.ParseConfig("agent.hcl", []byte("server {\n  encrypt = \""+strings.TrimSpace(out)+"\"\n}\n"))
	must.NoError(t, err)
	must.Eq(t, strings.TrimSpace(out), cfg.Server.EncryptKey)
	must.Eq(t, 44, len(strings.TrimSpace(out)))
}
