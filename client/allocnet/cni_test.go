package allocnet_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
)

// TestManager_CNINetworks checks which networks a cni_config_dir offers,
// as upstream reads it: lists and single-plugin files, by the name inside
// them, the first file in name order winning a name, and files that are no
// CNI configuration skipped rather than failing the node's fingerprint.
func TestManager_CNINetworks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		must.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	write("10-a.conflist", `{"cniVersion": "0.4.0", "name": "lan", "plugins": [{"type": "macvlan", "master": "eth0"}]}`)
	write("20-b.conf", `{"cniVersion": "0.4.0", "name": "single", "type": "ptp"}`)
	write("30-c.conflist", `{"cniVersion": "0.4.0", "name": "lan", "plugins": [{"type": "bridge"}]}`)
	write("40-d.json", `not json`)
	write("README", `ignored`)
	m, err := allocnet.New(allocnet.Config{StateDir: t.TempDir(), CNIConfigDir: dir})
	must.NoError(t, err)
	names, err := m.CNINetworks()
	must.NoError(t, err)
	must.Eq(t, []string{"lan", "single"}, names)

	m, err = allocnet.New(allocnet.Config{StateDir: t.TempDir(), CNIConfigDir: filepath.Join(dir, "missing")})
	must.NoError(t, err)
	names, err = m.CNINetworks()
	must.NoError(t, err)
	must.SliceEmpty(t, names)
}

// TestPluginVersions checks upstream's plugins.cni.version.<plugin>
// values: the last version token of what each executable of the CNI path
// prints, the first directory winning a name, and nothing for a file that
// prints none or is not executable.
func TestPluginVersions(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	script := func(dir, name, out string, mode os.FileMode) {
		must.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\necho '"+out+"'\n"), mode))
	}
	script(first, "bridge", "CNI bridge plugin v1.1.1\nCNI protocol versions supported: 0.4.0, 1.0.0", 0o755)
	script(second, "bridge", "CNI bridge plugin v9.9.9", 0o755)
	script(second, "ptp", "CNI ptp plugin v1.4.0", 0o755)
	script(second, "quiet", "nothing here", 0o755)
	script(second, "README", "v1.0.0", 0o644)
	got := allocnet.PluginVersions([]string{first, second, filepath.Join(first, "missing")})
	must.Eq(t, map[string]string{"bridge": "1.0.0", "ptp": "v1.4.0"}, got)
}
