package allocnet

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// DefaultCNIConfigDir is upstream's cni_config_dir: where the CNI networks
// of cni/<name> modes are configured.
const DefaultCNIConfigDir = "/opt/cni/config"

// cniConfigExts are the files read from the config dir, as upstream: CNI
// configuration lists (.conflist) and single-plugin configurations (.conf,
// .json), which are read as a list of one.
var cniConfigExts = []string{".conflist", ".conf", ".json"}

// ErrCNINetworkMissing is why a cni/<name> allocation cannot start: no file
// of the client's cni_config_dir configures a network of that name.
var ErrCNINetworkMissing = errors.New("CNI network not found")

// cniNetwork is one network configured in the config dir.
type cniNetwork struct {
	name string
	file string
	// conflist is the configuration as a list, what the record keeps.
	conflist []byte
}

// loadCNINetworks reads the networks configured in dir, by the "name" of
// each file's configuration. The files are read in name order and the
// first one naming a network wins, as libcni does; a file that is not a
// CNI configuration is reported in bad and skipped. A missing dir has no
// networks.
func loadCNINetworks(dir string) (nets map[string]cniNetwork, bad []error, err error) {
	files, err := libcni.ConfFiles(dir, cniConfigExts)
	if err != nil {
		return nil, nil, fmt.Errorf("cni_config_dir %s: %w", dir, err)
	}
	slices.Sort(files)
	nets = map[string]cniNetwork{}
	for _, f := range files {
		list, err := readCNIFile(f)
		if err != nil {
			bad = append(bad, fmt.Errorf("%s: %w", f, err))
			continue
		}
		if _, dup := nets[list.Name]; dup {
			bad = append(bad, fmt.Errorf("%s: CNI network %q is already configured by %s; this file is ignored", f, list.Name, nets[list.Name].file))
			continue
		}
		nets[list.Name] = cniNetwork{name: list.Name, file: f, conflist: list.Bytes}
	}
	return nets, bad, nil
}

func readCNIFile(path string) (*libcni.NetworkConfigList, error) {
	if strings.HasSuffix(path, ".conflist") {
		return libcni.ConfListFromFile(path)
	}
	// A single plugin's configuration is the list of that one plugin.
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var plugin map[string]any
	if err := json.Unmarshal(b, &plugin); err != nil {
		return nil, fmt.Errorf("parsing the CNI configuration: %w", err)
	}
	list, err := json.Marshal(map[string]any{"cniVersion": plugin["cniVersion"], "name": plugin["name"], "plugins": []any{plugin}})
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromBytes(list)
}

// CNINetworks lists the names of the networks in the client's
// cni_config_dir, sorted: what the node fingerprints as its cni/<name>
// network modes. Files that are no CNI configuration are logged and
// skipped.
func (m *Manager) CNINetworks() ([]string, error) {
	nets, bad, err := loadCNINetworks(m.cniConfigDir)
	if err != nil {
		return nil, err
	}
	for _, e := range bad {
		m.logger.Warn("skipping a file of cni_config_dir", "error", e)
	}
	names := make([]string, 0, len(nets))
	for n := range nets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names, nil
}

// cniConflist returns the configuration of the named network, read now, so
// that an operator's change applies to the next allocation.
func (m *Manager) cniConflist(name string) ([]byte, error) {
	nets, bad, err := loadCNINetworks(m.cniConfigDir)
	if err != nil {
		return nil, err
	}
	n, ok := nets[name]
	if !ok {
		err := fmt.Errorf("%w: no file of cni_config_dir %s configures a network named %q", ErrCNINetworkMissing, m.cniConfigDir, name)
		if len(bad) > 0 {
			err = fmt.Errorf("%w (unreadable: %w)", err, errors.Join(bad...))
		}
		return nil, err
	}
	return n.conflist, nil
}

// cniConfigDirOf is dir, or the default when empty.
func cniConfigDirOf(dir string) string {
	if dir == "" {
		return DefaultCNIConfigDir
	}
	return filepath.Clean(dir)
}
