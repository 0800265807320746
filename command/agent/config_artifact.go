package agent

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/nomad-edge/nomad/client"
	"github.com/nomad-edge/nomad/client/getter"
)

// ArtifactConfig is the client's `artifact` block: upstream's limits on
// artifact downloads, and cache_size_limit (ours) bounding the cache that
// keeps downloaded artifacts for a node cut off from their servers. Unset
// fields are nil, so that a later file's value wins when merged and the
// defaults fill the rest.
type ArtifactConfig struct {
	HTTPReadTimeout             *time.Duration `json:",omitempty"`
	HTTPMaxSize                 *int64         `json:",omitempty"`
	GitTimeout                  *time.Duration `json:",omitempty"`
	DecompressionSizeLimit      *int64         `json:",omitempty"`
	DecompressionFileCountLimit *int           `json:",omitempty"`
	DisableFilesystemIsolation  *bool          `json:",omitempty"`
	CacheSizeLimit              *int64         `json:",omitempty"`
}

// unsupportedArtifact are upstream's artifact keys for getters this client
// does not build in, or for its sandboxed getter process, which this
// client does not have.
var unsupportedArtifact = map[string]string{
	"gcs_timeout": "the gcs getter is not built into this client; fetch objects over https",
	"s3_timeout":  "the s3 getter is not built into this client; fetch objects over https",
	"hg_timeout":  "the hg (Mercurial) getter is not built into this client",
	"set_environment_variables": "artifacts are fetched inside the agent, not in a sandboxed process, " +
		"so they see the agent's whole environment (proxies, git and ssh settings) already",
}

// clientArtifact decodes `client { artifact { ... } }`.
func (d *configDecoder) clientArtifact(body hcl.Body) *ArtifactConfig {
	path := "client.artifact."
	b := d.open(body, path, bodySpec{
		attrs: []string{"http_read_timeout", "http_max_size", "git_timeout", "decompression_size_limit",
			"decompression_file_count_limit", "disable_filesystem_isolation", "cache_size_limit"},
		unsupported: unsupportedArtifact,
	})
	a := &ArtifactConfig{}
	b.optDuration("http_read_timeout", &a.HTTPReadTimeout)
	b.optDuration("git_timeout", &a.GitTimeout)
	b.optSize("http_max_size", &a.HTTPMaxSize)
	b.optSize("decompression_size_limit", &a.DecompressionSizeLimit)
	b.optSize("cache_size_limit", &a.CacheSizeLimit)
	b.optInt("decompression_file_count_limit", &a.DecompressionFileCountLimit)
	b.optBool("disable_filesystem_isolation", &a.DisableFilesystemIsolation)
	return a
}

// optSize reads a byte size ("100GB", "512MiB", "0") into *dst when the key
// is present.
func (b *block) optSize(name string, dst **int64) {
	v, a, ok := b.get(name, cty.String, `a size string such as "100GB" or "512MiB"`)
	if !ok {
		return
	}
	n, err := parseSize(v.AsString())
	if err != nil {
		b.d.errorf(a.Expr.Range(), "%s: %v", b.key(a), err)
		return
	}
	*dst = &n
}

// sizeUnits are the suffixes parseSize knows: SI (as upstream's "100GB")
// and binary ones.
var sizeUnits = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"t", 1e12}, {"b", 1},
}

// parseSize parses a byte size: a number with an optional unit.
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range sizeUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) || f*mult > math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q; use a form such as \"100GB\", \"512MiB\" or \"0\"", s)
	}
	return int64(f * mult), nil
}

// merge layers the fields b sets over a; a nil a yields a copy of b.
func (a *ArtifactConfig) merge(b *ArtifactConfig) *ArtifactConfig {
	if b == nil {
		return a
	}
	out := &ArtifactConfig{}
	if a != nil {
		*out = *a
	}
	mergePtr(&out.HTTPReadTimeout, b.HTTPReadTimeout)
	mergePtr(&out.HTTPMaxSize, b.HTTPMaxSize)
	mergePtr(&out.GitTimeout, b.GitTimeout)
	mergePtr(&out.DecompressionSizeLimit, b.DecompressionSizeLimit)
	mergePtr(&out.DecompressionFileCountLimit, b.DecompressionFileCountLimit)
	mergePtr(&out.DisableFilesystemIsolation, b.DisableFilesystemIsolation)
	mergePtr(&out.CacheSizeLimit, b.CacheSizeLimit)
	return out
}

// clientConfig is the block in the client's terms: upstream's defaults
// for what it leaves unset, a cache of client.DefaultArtifactCacheSize,
// and a cache_size_limit of 0 turning the cache off.
func (a *ArtifactConfig) clientConfig() *client.ArtifactConfig {
	out := &client.ArtifactConfig{Config: getter.DefaultConfig()}
	if a == nil {
		return out
	}
	set := func(dst *time.Duration, v *time.Duration) {
		if v != nil {
			*dst = *v
		}
	}
	set(&out.HTTPReadTimeout, a.HTTPReadTimeout)
	set(&out.GitTimeout, a.GitTimeout)
	if a.HTTPMaxSize != nil {
		out.HTTPMaxSize = *a.HTTPMaxSize
	}
	if a.DecompressionSizeLimit != nil {
		out.DecompressionSizeLimit = *a.DecompressionSizeLimit
	}
	if a.DecompressionFileCountLimit != nil {
		out.DecompressionFileCountLimit = *a.DecompressionFileCountLimit
	}
	if a.DisableFilesystemIsolation != nil {
		out.DisableFilesystemIsolation = *a.DisableFilesystemIsolation
	}
	if a.CacheSizeLimit != nil {
		out.CacheSizeLimit = *a.CacheSizeLimit
		if out.CacheSizeLimit == 0 {
			out.CacheSizeLimit = -1 // off
		}
	}
	return out
}
