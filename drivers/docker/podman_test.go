package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/docker/dockertest"
)

const (
	// testEndpointEnv passes the service's endpoint to the stand-in agent
	// (see runTestAgent).
	testEndpointEnv = "NOMAD_DOCKER_TEST_ENDPOINT"
	// testAgentEnv, when set to a task config as JSON, makes the test
	// binary a stand-in agent that starts the task and waits to be killed.
	testAgentEnv = "NOMAD_DOCKER_TEST_AGENT"
	testImage    = dockertest.Image
)

// podman is the test service, or why there is none.
var podman struct {
	endpoint string
	skip     string
	service  *dockertest.Podman
}

func TestMain(m *testing.M) {
	if cfg := os.Getenv(testAgentEnv); cfg != "" {
		os.Exit(runTestAgent(cfg))
	}
	p, err := dockertest.Start()
	if err != nil {
		podman.skip = err.Error()
	} else {
		podman.endpoint = p.Endpoint
		podman.service = p
	}
	code := m.Run()
	p.Stop()
	os.Exit(code)
}

// needPodman skips a test where Podman cannot run, saying why.
func needPodman(t *testing.T) {
	t.Helper()
	if podman.skip != "" {
		t.Skipf("docker driver tests need a Podman service: %s", podman.skip)
	}
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
