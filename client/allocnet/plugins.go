package allocnet

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// pluginVersionTimeout bounds one plugin's run: a plugin that hangs must
// not hold the node's fingerprint.
const pluginVersionTimeout = 2 * time.Second

// versionRE is a version token of a plugin's output ("v1.1.1", "1.0.0").
var versionRE = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)

// PluginVersions runs every executable of the CNI path's directories
// (the first directory holding a name wins it) without arguments, as
// upstream's fingerprint does, and returns each plugin's version: the last
// token of its output that reads as one. The reference plugins print
// their own version and then the CNI protocol versions they speak, so the
// last token is the newest protocol version (upstream reports the same).
// A plugin that prints no version is left out. Empty paths mean
// DefaultCNIPath.
func PluginVersions(paths []string) map[string]string {
	if len(paths) == 0 {
		paths = DefaultCNIPath
	}
	found := map[string]string{}
	for _, dir := range paths {
		ents, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if _, seen := found[e.Name()]; seen || e.IsDir() {
				continue
			}
			fi, err := e.Info()
			if err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
				continue
			}
			found[e.Name()] = filepath.Join(dir, e.Name())
		}
	}
	out := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, path := range found {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if v, ok := pluginVersion(path); ok {
				mu.Lock()
				out[name] = v
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

func pluginVersion(path string) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), pluginVersionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path)
	// No CNI_COMMAND: a plugin then only says what it is.
	cmd.Env = []string{}
	b, _ := cmd.CombinedOutput()
	f := strings.Fields(string(b))
	for i := len(f) - 1; i >= 0; i-- {
		if versionRE.MatchString(f[i]) {
			return f[i], true
		}
	}
	return "", false
}
