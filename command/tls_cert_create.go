package command

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/helper/tlsutil"
)

// TLSCertCreateCommand is `nomad tls cert create`.
type TLSCertCreateCommand struct {
	Meta
}

// Synopsis implements cli.Command.
func (c *TLSCertCreateCommand) Synopsis() string {
	return "Create a certificate for a server, client or CLI"
}

// Help implements cli.Command.
func (c *TLSCertCreateCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad tls cert create -server|-client|-cli [options]

  Create a certificate and key signed by the CA, in the working directory,
  named <region>-<role>-nomad.pem and <region>-<role>-nomad-key.pem.

  A server certificate names server.<region>.nomad: it lets its holder act
  as a server (take evaluations, submit plans, join raft), so give it only
  to servers. A client certificate names client.<region>.nomad, a CLI
  certificate cli.<region>.nomad. Every certificate also names localhost,
  and agent certificates 127.0.0.1.

Options:

  -server, -client, -cli
    Which certificate to create; exactly one.

  -region=<region>
    The region of the agents. Default: "global".

  -ca=<path>
    The CA certificate. Default: nomad-agent-ca.pem.

  -key=<path>
    The CA key. Default: nomad-agent-ca-key.pem.

  -days=<days>
    How many days the certificate is valid for. Default: 365.

  -additional-dnsname=<name>
    Another DNS name for the certificate. May be repeated.

  -additional-ipaddress=<ip>
    Another IP address for the certificate. May be repeated.
`)
}

// Run implements cli.Command.
func (c *TLSCertCreateCommand) Run(args []string) int {
	f := flag.NewFlagSet("tls cert create", flag.ContinueOnError)
	f.SetOutput(io.Discard)
	var server, client, cli bool
	var region, caFile, keyFile string
	var days int
	var dnsNames, ips stringSlice
	f.BoolVar(&server, "server", false, "")
	f.BoolVar(&client, "client", false, "")
	f.BoolVar(&cli, "cli", false, "")
	f.StringVar(&region, "region", "global", "")
	f.StringVar(&caFile, "ca", defaultCAFile, "")
	f.StringVar(&keyFile, "key", defaultCAKeyFile, "")
	f.IntVar(&days, "days", 365, "")
	f.Var(&dnsNames, "additional-dnsname", "")
	f.Var(&ips, "additional-ipaddress", "")
	if !c.parseFlags(f, args, c) {
		return exitError
	}
	if f.NArg() > 0 {
		return c.argsError("This command takes no arguments", "tls cert create")
	}
	role, err := certRole(server, client, cli)
	if err != nil {
		return c.argsError(err.Error(), "tls cert create")
	}
	if days <= 0 {
		c.Ui.Error("-days must be a positive number of days")
		return exitError
	}
	in, err := tlsutil.RoleCert(role, region)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	in.DNSNames = append(in.DNSNames, dnsNames...)
	for _, s := range ips {
		ip := net.ParseIP(s)
		if ip == nil {
			c.Ui.Error(fmt.Sprintf("Error: -additional-ipaddress %q is not an IP address", s))
			return exitError
		}
		in.IPs = append(in.IPs, ip)
	}
	in.Validity = time.Duration(days) * 24 * time.Hour
	if in.CA, err = os.ReadFile(caFile); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA (-ca): %v; create one with 'nomad tls ca create'", err))
		return exitError
	}
	if in.CAKey, err = os.ReadFile(keyFile); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the CA key (-key): %v", err))
		return exitError
	}
	cert, key, err := tlsutil.GenerateCert(in)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error creating the certificate: %v", err))
		return exitError
	}
	if role == tlsutil.RoleServer {
		c.Ui.Warn("==> WARNING: a server certificate lets its holder act as a server: take\n" +
			"    evaluations, submit plans and join raft. Put it only on servers, and\n" +
			"    keep it as safe as the CA key.")
	}
	c.Ui.Output(fmt.Sprintf("==> Using CA file %s and CA key %s", caFile, keyFile))
	base := fmt.Sprintf("%s-%s-nomad", region, role)
	label := map[tlsutil.Role]string{tlsutil.RoleServer: "Server", tlsutil.RoleClient: "Client", tlsutil.RoleCLI: "Cli"}[role]
	if err := writeNewFile(base+".pem", cert, 0o644); err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("==> %s Certificate saved to: %s.pem", label, base))
	if err := writeNewFile(base+"-key.pem", key, 0o600); err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	c.Ui.Output(fmt.Sprintf("==> %s Certificate key saved to: %s-key.pem", label, base))
	return exitOK
}

// certRole reads -server, -client and -cli, exactly one of which is set.
func certRole(server, client, cli bool) (tlsutil.Role, error) {
	n := 0
	var role tlsutil.Role
	for _, r := range []struct {
		set  bool
		role tlsutil.Role
	}{{server, tlsutil.RoleServer}, {client, tlsutil.RoleClient}, {cli, tlsutil.RoleCLI}} {
		if r.set {
			n++
			role = r.role
		}
	}
	if n != 1 {
		return "", errors.New("exactly one of -server, -client or -cli is required")
	}
	return role, nil
}

// stringSlice is a flag that may be repeated.
type stringSlice []string

func (s *stringSlice) String() string { return strings.Join(*s, ",") }

// Set implements flag.Value.
func (s *stringSlice) Set(v string) error {
	*s = append(*s, v)
	return nil
}
