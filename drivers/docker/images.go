package docker

import (
	"context"
	"sync"

	"github.com/nomad-edge/nomad/helper/clock"
)

// imageRefs counts the tasks using each image, so that the plugin's
// gc { image = true } removes an image image_delay after its last task is
// destroyed, and not while a task that will restart soon still needs it.
type imageRefs struct {
	d      *Driver
	mu     sync.Mutex
	refs   map[string]int
	timers map[string]clock.Timer
}

func newImageRefs(d *Driver) *imageRefs {
	return &imageRefs{d: d, refs: map[string]int{}, timers: map[string]clock.Timer{}}
}

func (r *imageRefs) acquire(id string) {
	if id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.refs[id]++
	if t, ok := r.timers[id]; ok {
		t.Stop()
		delete(r.timers, id)
	}
}

func (r *imageRefs) release(id string) {
	if id == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refs[id]--; r.refs[id] > 0 {
		return
	}
	delete(r.refs, id)
	if !r.d.pc.GCImage {
		return
	}
	r.timers[id] = r.d.clock.AfterFunc(r.d.pc.GCImageDelay, func() { r.remove(id) })
}

// remove deletes the image unless a task took it again meanwhile. The
// engine refuses to delete an image another container uses, which is fine:
// somebody else's container keeps it.
func (r *imageRefs) remove(id string) {
	r.mu.Lock()
	if r.refs[id] > 0 {
		r.mu.Unlock()
		return
	}
	delete(r.timers, id)
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), apiTimeout)
	defer cancel()
	if err := r.d.api.removeImage(ctx, id); err != nil {
		r.d.logger.Debug("image garbage collection skipped", "image_id", id, "error", err)
		return
	}
	r.d.logger.Debug("removed unused image", "image_id", id)
}
