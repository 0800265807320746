package tlsutil

import (
	"crypto/x509"
	"fmt"
	"net"
)

// Role is what a certificate is for, as `nomad tls cert create` names it.
type Role string

// The roles of `nomad tls cert create -server|-client|-cli`.
const (
	RoleServer Role = "server"
	RoleClient Role = "client"
	RoleCLI    Role = "cli"
)

// RoleCert returns the names and usages upstream gives a certificate of
// role in region: its role name, localhost, and for agents 127.0.0.1.
// Servers and clients may be either side of a link; a CLI only dials.
func RoleCert(role Role, region string) (CertInput, error) {
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	switch role {
	case RoleServer:
		n := ServerName(region)
		return CertInput{CommonName: n, DNSNames: []string{n, "localhost"}, IPs: loopback, ExtKeyUsage: both}, nil
	case RoleClient:
		n := ClientName(region)
		return CertInput{CommonName: n, DNSNames: []string{n, "localhost"}, IPs: loopback, ExtKeyUsage: both}, nil
	case RoleCLI:
		n := CLIName(region)
		return CertInput{CommonName: n, DNSNames: []string{n, "localhost"}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, nil
	}
	return CertInput{}, fmt.Errorf("unknown certificate role %q: want server, client or cli", role)
}
