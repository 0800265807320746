package harness

import "fmt"

// AgentHead is the top of an agent's config: its data dir (DataDirVar for
// the one the harness makes), its name ("" for none), its listeners on
// loopback at p, and for an upstream agent what it needs there
// (UpstreamOnLoopback). The caller adds the server or client blocks.
func AgentHead(dataDir, name string, p Ports, upstream bool) string {
	head := fmt.Sprintf("data_dir  = %q\nbind_addr = \"127.0.0.1\"\n", dataDir)
	if name != "" {
		head += fmt.Sprintf("name      = %q\n", name)
	}
	head += fmt.Sprintf("ports {\n  http = %d\n  rpc  = %d\n  serf = %d\n}\n", p.HTTP, p.RPC, p.Serf)
	if upstream {
		head += UpstreamOnLoopback
	}
	return head
}

// TLSBlock is an agent's `tls` block for RPC with the given CA,
// certificate and key files, checking the servers' host names.
func TLSBlock(caFile, certFile, keyFile string) string {
	return fmt.Sprintf(`
tls {
  rpc                    = true
  ca_file                = %q
  cert_file              = %q
  key_file               = %q
  verify_server_hostname = true
}
`, caFile, certFile, keyFile)
}
