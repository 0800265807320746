// Package dockertest runs a Podman service of its own for tests of the
// docker driver and of jobs that use it: its storage, run state and config
// live under a temporary directory, so tests never touch the host's
// containers or images. No registry is reachable, so the test image is
// imported from a tarball holding Debian's static busybox.
package dockertest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Image is the test image: busybox as /bin/busybox with links for sh,
// echo, sleep, cat, nc, httpd, ls, env and id.
const Image = "localhost/nomad-test-busybox:1"

const busyboxPath = "/usr/bin/busybox"

// Podman is a running test service.
type Podman struct {
	// Endpoint is the service's socket as the driver's `endpoint`.
	Endpoint string
	dir      string
	bin      string
	cmd      *exec.Cmd
}

// Start starts the service and imports Image, or says why it cannot: not
// root, no podman, runc or busybox-static.
func Start() (*Podman, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("not root (Podman's rootful service is what the tests use)")
	}
	bin, err := exec.LookPath("podman")
	if err != nil {
		return nil, errors.New("no podman binary: install Debian's podman, runc and busybox-static")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		return nil, errors.New("no runc binary: crun refuses hosts with hybrid cgroups, install Debian's runc")
	}
	if _, err := os.Stat(busyboxPath); err != nil {
		return nil, fmt.Errorf("no %s to build the test image from: install Debian's busybox-static", busyboxPath)
	}
	dir, err := os.MkdirTemp("", "nomad-podman-")
	if err != nil {
		return nil, err
	}
	p := &Podman{dir: dir, bin: bin, Endpoint: "unix://" + filepath.Join(dir, "podman.sock")}
	if err := p.start(); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Podman) start() error {
	dir := p.dir
	for _, d := range []string{"conf", "root", "run", "tmp", "networks"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	// runc and the ulimits: Debian's default crun, and Podman's default
	// ulimits, are refused on hosts with hybrid cgroup v1.
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
	cmd := p.command("system", "service", "--time=0", p.Endpoint)
	logf, err := os.Create(filepath.Join(dir, "service.log"))
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting podman system service: %w", err)
	}
	p.cmd = cmd
	hc := p.httpClient()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := hc.Get("http://podman/_ping")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(logf.Name())
			return fmt.Errorf("podman service did not answer within 30s: %v; log: %s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return p.importImage(hc)
}

// command runs podman against the service's own storage and config.
func (p *Podman) command(args ...string) *exec.Cmd {
	dir := p.dir
	full := append([]string{"--root", filepath.Join(dir, "root"), "--runroot", filepath.Join(dir, "run")}, args...)
	cmd := exec.Command(p.bin, full...)
	cmd.Env = append(os.Environ(),
		"CONTAINERS_CONF="+filepath.Join(dir, "conf", "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "conf", "storage.conf"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"),
		"XDG_CONFIG_HOME="+filepath.Join(dir, "conf"),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"),
	)
	return cmd
}

func (p *Podman) httpClient() *http.Client {
	sock := filepath.Join(p.dir, "podman.sock")
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
}

func (p *Podman) importImage(hc *http.Client) error {
	tarball, err := busyboxTar()
	if err != nil {
		return err
	}
	q := url.Values{"fromSrc": {"-"}, "repo": {Image}}
	resp, err := hc.Post("http://podman/images/create?"+q.Encode(), "application/x-tar", bytes.NewReader(tarball))
	if err != nil {
		return fmt.Errorf("importing the test image: %w", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("importing the test image: %s: %s", resp.Status, b)
	}
	return nil
}

// Running lists the IDs of the service's running containers.
func (p *Podman) Running() ([]string, error) {
	out, err := p.command("ps", "--quiet", "--no-trunc").Output()
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, l := range bytes.Fields(out) {
		ids = append(ids, string(l))
	}
	return ids, nil
}

// RunDetached starts a container of Image named name, with labels, that
// runs script with /bin/sh, as another program than our driver would (the
// upstream agent), and returns its ID.
func (p *Podman) RunDetached(name string, labels map[string]string, script string) (string, error) {
	args := []string{"run", "--detach", "--name", name}
	for k, v := range labels {
		args = append(args, "--label", k+"="+v)
	}
	args = append(args, Image, "/bin/sh", "-c", script)
	out, err := p.command(args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("podman run: %v: %s", err, out)
	}
	return string(bytes.TrimSpace(out)), nil
}

// Container is what the engine says of a container: its name, labels,
// when it started and whether it runs.
type Container struct {
	ID     string
	Name   string
	Labels map[string]string
	State  struct {
		Running   bool
		StartedAt time.Time
	}
}

// ErrNoSuchContainer is Inspect's error for a container the engine does
// not have (removed).
var ErrNoSuchContainer = errors.New("no such container")

// Inspect is the engine's view of container id, through its
// docker-compatible API (what a docker driver sees).
func (p *Podman) Inspect(id string) (*Container, error) {
	resp, err := p.httpClient().Get("http://podman/containers/" + url.PathEscape(id) + "/json")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s", ErrNoSuchContainer, id)
	default:
		return nil, fmt.Errorf("inspecting container %s: %s: %s", id, resp.Status, b)
	}
	var c struct {
		Container
		Config struct{ Labels map[string]string }
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("inspecting container %s: %w", id, err)
	}
	c.Container.Labels = c.Config.Labels
	return &c.Container, nil
}

// Save writes Image as a `docker save` archive to path.
func (p *Podman) Save(path string) error {
	if out, err := p.command("save", "--format", "docker-archive", "-o", path, Image).CombinedOutput(); err != nil {
		return fmt.Errorf("podman save: %v: %s", err, out)
	}
	return nil
}

// Stop removes every container left and stops the service.
func (p *Podman) Stop() {
	if p == nil {
		return
	}
	if p.cmd != nil {
		_ = p.command("rm", "--all", "--force", "--time", "0").Run()
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	}
	_ = os.RemoveAll(p.dir)
}

// busyboxTar is a root filesystem of one static busybox and its links.
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
