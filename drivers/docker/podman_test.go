package docker

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/docker/dockertest"
	"github.com/nomad-edge/nomad/drivers/internal/drivertest"
	"github.com/nomad-edge/nomad/testutil/wait"
)

const (
	// testEndpointEnv passes the service's endpoint to the stand-in agent
	// (drivertest.StartInCrashedAgent).
	testEndpointEnv = "NOMAD_DOCKER_TEST_ENDPOINT"
	testImage       = dockertest.Image
)

// podman is the test service, or why there is none.
var podman struct {
	endpoint string
	skip     string
	service  *dockertest.Podman
}

func TestMain(m *testing.M) {
	drivertest.RunAgentIfAsked(func() (drivers.Driver, error) {
		return New(drivers.Options{Config: map[string]any{"endpoint": os.Getenv(testEndpointEnv)}})
	})
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

// readFileUntil polls path until it contains want: the output crosses the
// engine's log stream, which no event of ours marks.
func readFileUntil(t *testing.T, path, want string) string {
	t.Helper()
	var b []byte
	wait.Poll(t, testTimeout, fmt.Sprintf("%s to contain %q", path, want), func() (bool, string) {
		b, _ = os.ReadFile(path)
		return strings.Contains(string(b), want), fmt.Sprintf("%q", b)
	})
	return string(b)
}
