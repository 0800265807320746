//go:build !linux

package cgroup

import (
	"errors"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/nomad-edge/nomad/drivers"

	"github.com/nomad-edge/nomad/helper/clock"
)

// Supported reports whether this platform has cgroups.
const Supported = false

var errUnsupported = errors.New("cgroups need Linux")

// Cgroups are a task's cgroups; there are none here.
type Cgroups struct {
	Version int      `json:"version"`
	Paths   []string `json:"paths"`
	Shared  bool     `json:"shared,omitempty"`
}

// Limits are what a task's cgroup enforces.
type Limits struct{ CPUShares, MemSoftMB, MemHardMB, Pids int }

// CreateInput says which cgroups Create makes.
type CreateInput struct {
	Version     int
	Name        string
	Controllers []string
	Limits      Limits
}

// Usage is what the kernel counts for a task's cgroups.
type Usage struct {
	CPU              CPUTime
	Memory           drivers.MemoryStats
	ThrottledPeriods uint64
	ThrottledTime    uint64
	MeasuredCPU      []string
}

// CPUTime is CPU time consumed, in nanoseconds.
type CPUTime struct{ User, System, Total uint64 }

// Detect finds no cgroups here.
func Detect([]string) (int, string) { return 0, errUnsupported.Error() }

// MountedV1 is false here.
func MountedV1(string) bool { return false }

// NameFor turns a task ID into one path element.
func NameFor(taskID string) string { return taskID }

// For names no cgroups here.
func For(version int, _ string, _ []string) Cgroups { return Cgroups{Version: version} }

// Create fails here.
func Create(CreateInput) (Cgroups, error) { return Cgroups{}, errUnsupported }

// SharedV2 fails here.
func SharedV2(string) (Cgroups, error) { return Cgroups{}, errUnsupported }

// Join fails here.
func (Cgroups) Join(int) error { return errUnsupported }

// JoinThread fails here.
func (Cgroups) JoinThread(int) (func() error, error) { return nil, errUnsupported }

// OOMKilled is false here.
func (Cgroups) OOMKilled() bool { return false }

// Pids is empty here.
func (Cgroups) Pids() []int { return nil }

// KillAll does nothing here.
func (Cgroups) KillAll() {}

// Destroy does nothing here.
func (Cgroups) Destroy() error { return nil }

// DestroyWait does nothing here.
func (Cgroups) DestroyWait(clock.Clock, time.Duration) error { return nil }

// Remove does nothing here.
func (Cgroups) Remove(clock.Clock, time.Duration) error { return nil }

// RemoveIfEmpty does nothing here.
func (Cgroups) RemoveIfEmpty(hclog.Logger) {}

// Valid is false here.
func (Cgroups) Valid() bool { return false }

// Usage is empty here.
func (Cgroups) Usage() Usage { return Usage{} }
