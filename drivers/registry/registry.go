package registry

import (
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/docker"
	"github.com/nomad-edge/nomad/drivers/exec"
	"github.com/nomad-edge/nomad/drivers/mock"
	"github.com/nomad-edge/nomad/drivers/rawexec"
)

// Builtin returns a new catalog holding the built-in drivers, "raw_exec",
// "exec", "docker" and "mock_driver". Each call returns a fresh catalog, so a caller (a test, an
// embedding program) may register more drivers without affecting others.
func Builtin() *drivers.Catalog {
	c := drivers.NewCatalog()
	for name, f := range map[string]drivers.Factory{
		rawexec.Name: rawexec.Factory,
		exec.Name:    exec.Factory,
		docker.Name:  docker.Factory,
		mock.Name:    mock.Factory,
	} {
		// Cannot fail: the names are distinct constants.
		_ = c.Register(name, f)
	}
	return c
}

// New builds the built-in driver called name. An unknown name is an error
// wrapping drivers.ErrUnknownDriver.
func New(name string, opts drivers.Options) (drivers.Driver, error) {
	return Builtin().New(name, opts)
}
