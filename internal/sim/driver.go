package sim

import (
	"sync"
	"time"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/mock"
)

// taskCounter counts task starts and stops over the whole fleet. A task ID
// ("<allocID>/<task>") started twice is a restart: the invariant a
// reconnect storm must keep is that no healthy task is.
type taskCounter struct {
	mu     sync.Mutex
	starts map[string]int
	stops  int
}

func newTaskCounter() *taskCounter { return &taskCounter{starts: map[string]int{}} }

func (t *taskCounter) started(id string) {
	t.mu.Lock()
	t.starts[id]++
	t.mu.Unlock()
}

func (t *taskCounter) stopped() {
	t.mu.Lock()
	t.stops++
	t.mu.Unlock()
}

// counts returns tasks started, starts beyond each task's first, and stops.
func (t *taskCounter) counts() (tasks, restarts, stops int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, n := range t.starts {
		restarts += n - 1
	}
	return len(t.starts), restarts, t.stops
}

// countingDriver is the mock driver with every start and stop counted.
type countingDriver struct {
	drivers.Driver
	count *taskCounter
}

func (d countingDriver) StartTask(cfg *drivers.TaskConfig) (*drivers.TaskHandle, error) {
	h, err := d.Driver.StartTask(cfg)
	if err == nil {
		d.count.started(cfg.ID)
	}
	return h, err
}

func (d countingDriver) StopTask(taskID string, timeout time.Duration, signal string) error {
	d.count.stopped()
	return d.Driver.StopTask(taskID, timeout, signal)
}

// catalog is the drivers every simulated node offers: mock_driver only.
func catalog(count *taskCounter) *drivers.Catalog {
	c := drivers.NewCatalog()
	// Register fails only on a duplicate name, and this catalog is fresh.
	_ = c.Register(mock.Name, func(opts drivers.Options) (drivers.Driver, error) {
		d, err := mock.Factory(opts)
		if err != nil {
			return nil, err
		}
		return countingDriver{Driver: d, count: count}, nil
	})
	return c
}
