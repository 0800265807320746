package client

import (
	"path/filepath"

	"github.com/nomad-edge/nomad/client/getter"
)

// ArtifactConfig is the client's `artifact` block: the limits of artifact
// downloads and, beyond upstream, the size of the artifact cache that
// lets a node cut off from an artifact's server start its tasks with the
// copy it kept (client/getter).
type ArtifactConfig struct {
	getter.Config
	// CacheDir holds the cache; empty means <state dir>/artifacts.
	CacheDir string
	// CacheSizeLimit bounds the cache in bytes; zero means
	// DefaultArtifactCacheSize, negative turns the cache off.
	CacheSizeLimit int64
}

// DefaultArtifactCacheSize is the artifact cache's bound when the client's
// artifact block does not set cache_size_limit: 1 GiB.
const DefaultArtifactCacheSize = 1 << 30

// newArtifactGetter builds the getter every task's artifacts go through,
// with its cache. A nil cfg means upstream's defaults.
func newArtifactGetter(conf *Config, c *Client) (*getter.Getter, error) {
	cfg := conf.Artifact
	if cfg == nil {
		cfg = &ArtifactConfig{Config: getter.DefaultConfig()}
	}
	dir := cfg.CacheDir
	if dir == "" && conf.StateDir != "" {
		dir = filepath.Join(conf.StateDir, "artifacts")
	}
	size := cfg.CacheSizeLimit
	if size == 0 {
		size = DefaultArtifactCacheSize
	}
	var cache *getter.Cache
	if dir != "" && size > 0 {
		var err error
		if cache, err = getter.OpenCache(dir, size, c.clock); err != nil {
			return nil, err
		}
	}
	return getter.New(cfg.Config, cache, c.logger.Named("artifact")), nil
}
