package drivers

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Options is what a driver factory receives from the client agent.
type Options struct {
	// Logger is the parent logger; drivers name a sub-logger after
	// themselves. Nil means discard.
	Logger hclog.Logger

	// Config is the driver's block from the agent configuration,
	// `plugin "<name>" { config { ... } }`, loosely typed like a task's
	// config. Read it with ConfigDecoder.
	Config map[string]interface{}

	// ChrootEnv is the client's `chroot_env`: host paths (keys) bound at
	// paths (values) inside the root of drivers that build one (exec).
	// Nil means the driver's default.
	ChrootEnv map[string]string
}

// LoggerOrNull returns o.Logger, or a logger that discards everything, so that
// drivers never have to nil-check.
func (o Options) LoggerOrNull() hclog.Logger {
	if o.Logger == nil {
		return hclog.NewNullLogger()
	}
	return o.Logger
}

// Factory builds a driver. It fails on invalid agent config (with a
// *ConfigError) rather than building a driver that would fail every task.
type Factory func(opts Options) (Driver, error)

// Catalog maps driver names to factories. It lets the client build drivers by
// the name an operator writes in the agent config, and lets tests register
// their own drivers beside the built-in ones (see the registry subpackage).
type Catalog struct {
	mu        sync.RWMutex
	factories map[string]Factory
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	return &Catalog{factories: make(map[string]Factory)}
}

// Register adds a factory under name. A duplicate name is an error wrapping
// ErrDriverExists: silently replacing a driver would make which one runs
// depend on registration order.
func (c *Catalog) Register(name string, f Factory) error {
	if name == "" || f == nil {
		return fmt.Errorf("registering driver %q: name and factory are required", name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.factories[name]; ok {
		return fmt.Errorf("%w: %q", ErrDriverExists, name)
	}
	c.factories[name] = f
	return nil
}

// New builds the driver registered under name. An unknown name is an error
// wrapping ErrUnknownDriver.
func (c *Catalog) New(name string, opts Options) (Driver, error) {
	c.mu.RLock()
	f, ok := c.factories[name]
	c.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownDriver, name)
	}
	d, err := f(opts)
	if err != nil {
		return nil, fmt.Errorf("driver %q: %w", name, err)
	}
	return d, nil
}

// Names returns the registered names, sorted.
func (c *Catalog) Names() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.factories))
}
