package template

import (
	"context"
	"errors"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Source is where templates read their data. Every call returns the data
// and the index it is at. With minIndex > 0 a call is a blocking query:
// it returns once the index passes minIndex, or with the same index when
// the source's wait runs out; it returns early with ctx's error when ctx
// ends. Implementations are safe for concurrent use.
type Source interface {
	// Var reads one variable; nil when the path holds nothing.
	Var(ctx context.Context, path string, minIndex uint64) (*structs.VariableDecrypted, uint64, error)
	// VarList lists the variables under prefix.
	VarList(ctx context.Context, prefix string, minIndex uint64) ([]*structs.VariableMetadata, uint64, error)
	// Service reads one service's instances.
	Service(ctx context.Context, name string, minIndex uint64) ([]*structs.ServiceRegistration, uint64, error)
	// Services lists the services of the task's namespace.
	Services(ctx context.Context, minIndex uint64) ([]*structs.ServiceRegistrationStub, uint64, error)
}

// ErrMissingVar is a render that read a variable that does not exist:
// as upstream, the template waits for it (Watch on the render's Deps)
// rather than rendering without it.
var ErrMissingVar = errors.New("variable does not exist")

// Dep is one read a render made.
type Dep struct {
	Kind string // "var", "varList", "service", "services"
	Arg  string // the path, prefix or service name
}

// read asks src for dep's data at minIndex; the value is what the
// template functions see.
func read(ctx context.Context, src Source, d Dep, minIndex uint64) (any, uint64, error) {
	switch d.Kind {
	case "var":
		return wrap(src.Var(ctx, d.Arg, minIndex))
	case "varList":
		return wrap(src.VarList(ctx, d.Arg, minIndex))
	case "service":
		return wrap(src.Service(ctx, d.Arg, minIndex))
	case "services":
		return wrap(src.Services(ctx, minIndex))
	}
	return nil, 0, errors.New("unknown dependency kind " + d.Kind)
}

func wrap[T any](v T, idx uint64, err error) (any, uint64, error) { return v, idx, err }

// Watch blocks until one of deps is past the index it was read at, and
// returns nil then; or until ctx ends or a read fails, returning that
// error. A render with no deps never changes: Watch waits for ctx.
func Watch(ctx context.Context, src Source, deps map[Dep]uint64) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, len(deps))
	for d, idx := range deps {
		go func() {
			for {
				_, got, err := read(ctx, src, d, max(idx, 1))
				if err != nil {
					done <- err
					return
				}
				if got > idx {
					done <- nil
					return
				}
			}
		}()
	}
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
