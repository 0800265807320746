//go:build !linux

package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/nomad-edge/nomad/drivers"
)

// Driver is the exec driver; off Linux it is never detected.
type Driver struct{}

// New builds the driver.
func New(drivers.Options) (*Driver, error) { return &Driver{}, nil }

// Init does nothing off Linux.
func Init() {}

// Fingerprint implements drivers.Driver.
func (d *Driver) Fingerprint() *drivers.Fingerprint {
	return &drivers.Fingerprint{HealthDescription: drivers.HealthDescUndetected + ": exec needs Linux"}
}

// StartTask implements drivers.Driver.
func (d *Driver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	return nil, fmt.Errorf("%w: exec needs Linux", ErrCannotIsolate)
}

// RecoverTask implements drivers.Driver.
func (d *Driver) RecoverTask(*drivers.TaskHandle) error { return drivers.ErrTaskNotFound }

// WaitTask implements drivers.Driver.
func (d *Driver) WaitTask(context.Context, string) (<-chan *drivers.ExitResult, error) {
	return nil, drivers.ErrTaskNotFound
}

// StopTask implements drivers.Driver.
func (d *Driver) StopTask(string, time.Duration, string) error { return drivers.ErrTaskNotFound }

// DestroyTask implements drivers.Driver.
func (d *Driver) DestroyTask(string, bool) error { return drivers.ErrTaskNotFound }

// InspectTask implements drivers.Driver.
func (d *Driver) InspectTask(string) (*drivers.TaskStatus, error) {
	return nil, drivers.ErrTaskNotFound
}
