package harness

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/shoenig/test/must"
)

// ConfigVar stands for the config file (AgentConfig.Config) in the Args of
// a Program, whose command line the harness does not write for it.
const ConfigVar = "@CONFIG@"

// toolsDir is where the reference programs no one on this project wrote
// are kept, relative to the module root (see its README.md).
const toolsDir = "../shared/tools"

// tools are the programs Tool unpacked in this test binary, by name.
var (
	toolsMu sync.Mutex
	tools   = map[string]string{}
)

// Tool is the path of the reference program name (toolsDir/name.gz, e.g.
// "nomad-autoscaler-0.5.0"), unpacked once per test binary beside the
// nomad binary Main built, for AgentConfig.Program. It skips the test,
// saying where the file should be, when this clone has no such file: a
// clone without the fixtures still passes.
func Tool(t testing.TB, name string) string {
	t.Helper()
	must.NotEq(t, "", bin, must.Sprint("no binary: the suite's TestMain must call harness.Main"))
	toolsMu.Lock()
	defer toolsMu.Unlock()
	if path, ok := tools[name]; ok {
		return path
	}
	root, err := moduleRoot()
	must.NoError(t, err)
	gz, err := os.Open(filepath.Join(root, toolsDir, name+".gz"))
	if err != nil {
		t.Skipf("the reference program %s is not here (%v): see %s/README.md", name, err, toolsDir)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	must.NoError(t, err)
	path := filepath.Join(filepath.Dir(bin), name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	must.NoError(t, err)
	_, err = io.Copy(f, zr)
	must.NoError(t, err)
	must.NoError(t, f.Close())
	tools[name] = path
	return path
}
