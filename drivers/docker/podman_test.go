package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// The tests run against a Podman service of their own: its storage, run
// state and config live under a temporary directory, so they never touch
// the host's containers or images. No registry is reachable, so the test
// image is imported from a tarball holding Debian's static busybox.
const (
	// testEndpointEnv passes the service's endpoint to the stand-in agent
	// (see runTestAgent).
	testEndpointEnv = "NOMAD_DOCKER_TEST_ENDPOINT"
	// testAgentEnv, when set to a task config as JSON, makes the test
	// binary a stand-in agent that starts the task and waits to be killed.
	testAgentEnv = "NOMAD_DOCKER_TEST_AGENT"
	testImage    = "localhost/nomad-test-busybox:1"
	busyboxPath  = "/usr/bin/busybox"
)

// podman is the test service, or why there is none.
var podman struct {
	endpoint string
	skip     string
	dir      string
	cmd      *exec.Cmd
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(testAgentEnv); cfg != "" {
		os.Exit(runTestAgent(cfg))
	}
	if err := startPodman(); err != nil {
		podman.skip = err.Error()
	}
	code := m.Run()
	stopPodman()
	os.Exit(code)
}

// needPodman skips a test where Podman cannot run, saying why.
func needPodman(t *testing.T) {
	t.Helper()
	if podman.skip != "" {
		t.Skipf("docker driver tests need a Podman service: %s", podman.skip)
	}
}

func startPodman() error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("not root (Podman's rootful service is what the tests use)")
	}
	bin, err := exec.LookPath("podman")
	if err != nil {
		return fmt.Errorf("no podman binary: install Debian's podman, runc and busybox-static")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return fmt.Errorf("no runc binary: crun refuses this kind of host, install Debian's runc")
	}
	if _, err := os.Stat(busyboxPath); err != nil {
		return fmt.Errorf("no %s to build the test image from: install Debian's busybox-static", busyboxPath)
	}
	dir, err := os.MkdirTemp("", "nomad-podman-")
	if err != nil {
		return err
	}
	podman.dir = dir
	for _, d := range []string{"conf", "root", "run", "tmp", "networks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	conf := fmt.Sprintf(`[containers]
default_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = %[1]q
[network]
network_config_dir = %[2]q
`, filepath.Join(dir, "tmp"), filepath.Join(dir, "networks"))
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\nrunroot = %q\ngraphroot = %q\n",
		filepath.Join(dir, "run"), filepath.Join(dir, "root"))
	if err := os.WriteFile(filepath.Join(dir, "conf", "containers.conf"), []byte(conf), 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "conf", "storage.conf"), []byte(storage), 0o600); err != nil {
		return err
	}
	sock := filepath.Join(dir, "podman.sock")
	podman.endpoint = "unix://" + sock
	cmd := podmanCmd(bin, "system", "service", "--time=0", podman.endpoint)
	logf, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting podman system service: %w", err)
	}
	podman.cmd = cmd
	c, _ := newClient(podman.endpoint)
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.ping(ctx)
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("podman service did not answer within 30s: %v; log: %s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	tarball, err := busyboxTar()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.importImage(ctx, testImage, bytes.NewReader(tarball)); err != nil {
		return fmt.Errorf("importing the test image: %w", err)
	}
	return nil
}

// podmanCmd runs podman against the test's own storage and config.
func podmanCmd(bin string, args ...string) *exec.Cmd {
	dir := podman.dir
	full := append([]string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run")}, args...)
	cmd := exec.Command(bin, full...)
	cmd.Env = append(os.Environ(),
		"CONTAINERS_CONF="+filepath.Join(dir, "conf", "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "conf", "storage.conf"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "conf"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	return cmd
}

// stopPodman removes every container the tests left and stops the service.
func stopPodman() {
	if podman.cmd == nil {
		return
	}
	if bin, err := exec.LookPath("podman"); err == nil {
		_ = podmanCmd(bin, "rm", "--all", "--force", "--time", "0").Run()
	}
	_ = podman.cmd.Process.Kill()
	_ = podman.cmd.Wait()
	_ = os.RemoveAll(podman.dir)
}

// busyboxTar is a root filesystem of one static busybox and the applet
// links the tests use.
func busyboxTar() ([]byte, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdrs := []*tar.Header{
		{Name: "bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "tmp/", Typeflag: tar.TypeDir, Mode: 0o1777},
		{Name: "bin/busybox", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(bin))},
	}
	for _, a := range []string{"sh", "echo", "sleep", "cat", "nc", "httpd", "ls", "env", "id"} {
		hdrs = append(hdrs, &tar.Header{Name: "bin/" + a, Typeflag: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bin); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// runTestAgent starts the task as an agent would, prints the handle the
// client would persist, and waits to be killed: the test then sees a real
// agent crash, not a driver value going out of scope.
func runTestAgent(cfgJSON string) int {
	var cfg drivers.TaskConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	d, err := New(drivers.Options{Config: map[string]any{"endpoint": os.Getenv(testEndpointEnv)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	h, err := d.StartTask(&cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := json.NewEncoder(os.Stdout).Encode(h); err != nil {
		return 1
	}
	select {}
}

// readFileUntil polls path until it contains want: the output crosses the
// engine's log stream, which no event of ours marks.
func readFileUntil(t *testing.T, path, want string) string {
	t.Helper()
	deadline := time.Now().Add(testTimeout)
	for {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never contained %q; last content: %q", path, want, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
