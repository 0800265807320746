package harness

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// bin is the binary Main built.
var bin string

// Bin is the path of the nomad binary Main built for this test binary.
func Bin() string { return bin }

// Main is a suite's TestMain: it builds the nomad binary of this tree once
// for the whole test binary, runs the tests, and exits. Every test kills
// its agents; one left running is a harness bug that would hold ports and
// CPU after the run, so Main says so, kills it and fails the run. On
// SIGINT or SIGTERM (`go test` interrupted) it kills every agent and task
// of the running tests and removes their namespaces before exiting.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "nomad-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "nomad")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = root
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building nomad:", err)
		os.Exit(1)
	}
	stopOnSignal()
	code := m.Run()
	// Tool unpacks programs into the binary's directory: one left
	// running is caught the same way.
	if left := pidsWithCmdline(dir + string(filepath.Separator)); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "agents outlived their tests (killed now): pids %v\n", left)
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// moduleRoot is the directory of the go.mod above the working directory
// (a test runs in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("harness: no go.mod above the working directory")
		}
		dir = parent
	}
}

// live is what the running tests hold, for the signal handler to undo.
var live = struct {
	sync.Mutex
	agents  map[*Agents]bool
	fabrics map[*Fabric]bool
}{agents: map[*Agents]bool{}, fabrics: map[*Fabric]bool{}}

func stopOnSignal() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-ch
		for _, pid := range pidsWithCmdline(filepath.Dir(bin) + string(filepath.Separator)) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		live.Lock()
		for ags := range live.agents {
			KillTasks(ags.taskMarks()...)
		}
		for f := range live.fabrics {
			f.teardown()
		}
		live.Unlock()
		fmt.Fprintf(os.Stderr, "e2e: %v: agents and their tasks killed, network namespaces removed\n", sig)
		os.Exit(1)
	}()
}
