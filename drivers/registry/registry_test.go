package registry

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/drivers"
)

// TestBuiltin checks that the names operators write in agent config and jobs
// resolve to the matching drivers, and that the plugin config reaches them.
func TestBuiltin(t *testing.T) {
	must.Eq(t, []string{"docker", "exec", "mock_driver", "raw_exec"}, Builtin().Names())

	for _, name := range []string{"raw_exec", "exec", "docker", "mock_driver"} {
		d, err := New(name, drivers.Options{})
		must.NoError(t, err)
		must.Eq(t, name, d.Name())
	}

	d, err := New("raw_exec", drivers.Options{Config: map[string]any{"enabled": true}})
	must.NoError(t, err)
	must.True(t, d.Fingerprint().Healthy)

	_, err = New("lxc", drivers.Options{})
	must.ErrorIs(t, err, drivers.ErrUnknownDriver)

	_, err = New("raw_exec", drivers.Options{Config: map[string]any{"enabled": "maybe"}})
	must.ErrorIs(t, err, drivers.ErrInvalidConfig)
}
