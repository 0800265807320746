package structs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// Artifact getter modes, as upstream's `mode` key has them.
const (
	ArtifactModeAny  = "any"
	ArtifactModeFile = "file"
	ArtifactModeDir  = "dir"
)

// TaskArtifact is a task's `artifact` block: something the client fetches
// into the task's directory before the task starts.
type TaskArtifact struct {
	// GetterSource is the URL (http, https, git, a local path) to fetch.
	GetterSource string
	// GetterOptions are go-getter's options (checksum, archive, git's
	// ref...), passed to the source as query parameters.
	GetterOptions map[string]string
	// GetterHeaders are sent with http(s) requests.
	GetterHeaders map[string]string
	// GetterMode is any, file or dir.
	GetterMode string
	// RelativeDest is where the artifact goes, relative to the task's
	// directory.
	RelativeDest string
}

// Copy returns a deep copy.
func (a *TaskArtifact) Copy() *TaskArtifact {
	if a == nil {
		return nil
	}
	n := *a
	n.GetterOptions = maps.Clone(a.GetterOptions)
	n.GetterHeaders = maps.Clone(a.GetterHeaders)
	return &n
}

// Hash identifies the artifact by everything that says what is fetched
// and where it goes, so that a client can tell the artifacts of a task
// apart across restarts.
func (a *TaskArtifact) Hash() string {
	h := sha256.New()
	w := func(s string) { h.Write([]byte(s)); h.Write([]byte{0}) }
	w(a.GetterSource)
	for _, m := range []map[string]string{a.GetterOptions, a.GetterHeaders} {
		for _, k := range slices.Sorted(maps.Keys(m)) {
			w(k)
			w(m[k])
		}
		w("")
	}
	w(a.GetterMode)
	w(a.RelativeDest)
	return hex.EncodeToString(h.Sum(nil))
}

// ArtifactDestEscapes reports whether dest, relative to a task's
// directory, leaves the allocation's directory: as upstream, a task may
// put an artifact in its own directory or in the group's shared alloc/
// directory (../alloc/...), and nowhere else. An absolute dest is taken as
// relative to the task's directory.
func ArtifactDestEscapes(dest string) bool {
	rel := filepath.Clean(filepath.Join("task", dest))
	for _, root := range []string{"task", "alloc"} {
		if rel == root || strings.HasPrefix(rel, root+string(filepath.Separator)) {
			return false
		}
	}
	return true
}

// checksumHexLen is the hex length of each checksum type go-getter knows.
var checksumHexLen = map[string]int{"md5": 32, "sha1": 40, "sha256": 64, "sha512": 128}

// ParseArtifactChecksum splits a `checksum` option ("type:value") and
// checks it.
func ParseArtifactChecksum(s string) (typ, value string, err error) {
	typ, value, ok := strings.Cut(s, ":")
	if !ok {
		return "", "", fmt.Errorf("checksum %q is not in the format type:value", s)
	}
	n, known := checksumHexLen[typ]
	if !known {
		return "", "", fmt.Errorf("unsupported checksum type %q (want md5, sha1, sha256 or sha512)", typ)
	}
	if _, err := hex.DecodeString(value); err != nil || len(value) != n {
		return "", "", fmt.Errorf("invalid %s checksum %q: want %d hex digits", typ, value, n)
	}
	return typ, strings.ToLower(value), nil
}

// Validate checks the artifact as the server sees it, before the client
// interpolates ${...} in it.
func (a *TaskArtifact) Validate() error {
	var p problems
	if a.GetterSource == "" {
		p.add("artifact source must be specified")
	}
	switch a.GetterMode {
	case "", ArtifactModeAny, ArtifactModeFile, ArtifactModeDir:
	default:
		p.add("invalid artifact mode %q; must be one of: any, file, dir", a.GetterMode)
	}
	if ArtifactDestEscapes(a.RelativeDest) {
		p.add("artifact destination %q escapes the allocation directory", a.RelativeDest)
	}
	// A checksum with ${...} in it is only known on the client.
	if c, ok := a.GetterOptions["checksum"]; ok && !strings.Contains(c, "${") {
		if _, _, err := ParseArtifactChecksum(c); err != nil {
			p.add("artifact options: %v", err)
		}
	}
	return p.err()
}

func copyArtifacts(in []*TaskArtifact) []*TaskArtifact {
	if in == nil {
		return nil
	}
	out := make([]*TaskArtifact, len(in))
	for i, a := range in {
		out[i] = a.Copy()
	}
	return out
}
