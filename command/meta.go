package command

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/cli"

	"github.com/nomad-edge/nomad/api"
)

// Meta is what every command shares: the UI and the flags that say which
// agent to talk to.
type Meta struct {
	Ui cli.Ui

	address   string
	region    string
	namespace string
	token     string

	// TLS flags; each overrides its NOMAD_* variable.
	caCert        string
	caPath        string
	clientCert    string
	clientKey     string
	tlsServerName string
	tlsSkipVerify bool

	// noColor is accepted as upstream's -no-color; our output has no
	// colour to turn off.
	noColor bool
}

// FlagSet returns a flag set with the common flags. Errors are reported by
// the command (parseFlags), not printed by the flag package.
func (m *Meta) FlagSet(name string) *flag.FlagSet {
	f := flag.NewFlagSet(name, flag.ContinueOnError)
	f.SetOutput(io.Discard)
	f.StringVar(&m.address, "address", "", "")
	f.StringVar(&m.region, "region", "", "")
	f.StringVar(&m.namespace, "namespace", "", "")
	f.StringVar(&m.token, "token", "", "")
	f.StringVar(&m.caCert, "ca-cert", "", "")
	f.StringVar(&m.caPath, "ca-path", "", "")
	f.StringVar(&m.clientCert, "client-cert", "", "")
	f.StringVar(&m.clientKey, "client-key", "", "")
	f.StringVar(&m.tlsServerName, "tls-server-name", "", "")
	f.BoolVar(&m.tlsSkipVerify, "tls-skip-verify", false, "")
	f.BoolVar(&m.noColor, "no-color", false, "")
	return f
}

// Client returns an API client for the agent named by -address, or else
// NOMAD_ADDR, or else the local default.
func (m *Meta) Client() (*api.Client, error) {
	cfg := api.DefaultConfig()
	if m.address != "" {
		cfg.Address = m.address
	}
	if m.region != "" {
		cfg.Region = m.region
	}
	if m.namespace != "" {
		cfg.Namespace = m.namespace
	}
	if m.token != "" {
		cfg.SecretID = m.token
	}
	t := cfg.TLSConfig
	for _, f := range []struct {
		dst *string
		v   string
	}{
		{&t.CACert, m.caCert}, {&t.CAPath, m.caPath}, {&t.ClientCert, m.clientCert},
		{&t.ClientKey, m.clientKey}, {&t.TLSServerName, m.tlsServerName},
	} {
		if f.v != "" {
			*f.dst = f.v
		}
	}
	if m.tlsSkipVerify {
		t.Insecure = true
	}
	return api.NewClient(cfg)
}

// allNamespaces says whether the command reads every namespace the token
// may read: -namespace=*, or NOMAD_NAMESPACE=* without the flag.
func (m *Meta) allNamespaces() bool {
	ns := m.namespace
	if ns == "" {
		ns = os.Getenv(api.EnvNamespace)
	}
	return ns == "*"
}

// helpCommand is a command with help text, which parseFlags prints on a
// flag error.
type helpCommand interface {
	Help() string
}

// parseFlags parses args, printing the error and the command's usage on
// failure. ok is false when the command must exit 1.
func (m *Meta) parseFlags(f *flag.FlagSet, args []string, c helpCommand) bool {
	if err := f.Parse(args); err != nil {
		if err == flag.ErrHelp {
			m.Ui.Output(c.Help())
			return false
		}
		m.Ui.Error(fmt.Sprintf("Error: %v", err))
		m.Ui.Error(c.Help())
		return false
	}
	return true
}

// argsError reports a wrong number of arguments, with a pointer to help.
func (m *Meta) argsError(msg, command string) int {
	m.Ui.Error(msg)
	m.Ui.Error(fmt.Sprintf("For additional help try 'nomad %s -help'", command))
	return 1
}

// generalOptions is the help text of the flags Meta adds.
func generalOptions() string {
	return strings.TrimSpace(`
General Options:

  -address=<addr>
    The address of the agent's HTTP API. Overrides the NOMAD_ADDR
    environment variable. Default: http://127.0.0.1:4646.

  -region=<region>
    The region to send the request to. Overrides NOMAD_REGION.

  -namespace=<namespace>
    The namespace to use. Overrides NOMAD_NAMESPACE. Default: "default".

  -token=<secret-id>
    The ACL token's secret ID, sent as X-Nomad-Token. Overrides
    NOMAD_TOKEN.

  -ca-cert=<path>
    The CA certificate (PEM) to verify the agent's HTTPS certificate
    with. Overrides NOMAD_CACERT.

  -ca-path=<path>
    A directory of CA certificates (PEM) to verify the agent's HTTPS
    certificate with. Overrides NOMAD_CAPATH.

  -client-cert=<path>
    The certificate (PEM) to present to an agent with
    verify_https_client. Overrides NOMAD_CLIENT_CERT.

  -client-key=<path>
    The private key (PEM) of -client-cert. Overrides NOMAD_CLIENT_KEY.

  -tls-server-name=<name>
    The name to verify the agent's certificate against, when it is not
    the host of -address. Overrides NOMAD_TLS_SERVER_NAME.

  -tls-skip-verify
    Do not verify the agent's certificate. Not for production.
    Overrides NOMAD_SKIP_VERIFY.

  -no-color
    Disable colored output. Accepted for scripts written for upstream;
    the output has no color to disable.
`)
}
