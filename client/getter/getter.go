package getter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	gg "github.com/hashicorp/go-getter/v2"
	"github.com/hashicorp/go-hclog"
)

// Errors a fetch may wrap; match them with errors.Is.
var (
	// ErrUnsupportedGetter is a source this client does not fetch from
	// (s3, gcs, hg, smb).
	ErrUnsupportedGetter = errors.New("unsupported artifact getter")
	// ErrChecksumMismatch is a download whose content does not have the
	// checksum its options give.
	ErrChecksumMismatch = errors.New("artifact checksum did not match")
	// ErrTooLarge is a download over the client's http_max_size.
	ErrTooLarge = errors.New("artifact exceeds the client's http_max_size")
	// ErrDestEscapes is a destination outside the allocation directory.
	ErrDestEscapes = errors.New("artifact destination escapes the allocation directory")
	// ErrBadRequest is an artifact whose options or mode cannot work.
	ErrBadRequest = errors.New("invalid artifact")
)

// Config is the client's `artifact` block, resolved.
type Config struct {
	// HTTPReadTimeout bounds one http(s) download, start to end; zero
	// means no bound.
	HTTPReadTimeout time.Duration
	// HTTPMaxSize is the largest http(s) download; zero means no limit.
	HTTPMaxSize int64
	// GitTimeout bounds one git fetch; zero means no bound.
	GitTimeout time.Duration
	// DecompressionSizeLimit and DecompressionFileCountLimit bound what
	// an archive may unpack to; zero means no limit.
	DecompressionSizeLimit      int64
	DecompressionFileCountLimit int
	// DisableFilesystemIsolation lets local-file sources name any path
	// on the host; otherwise they must be inside the allocation's
	// directory.
	DisableFilesystemIsolation bool
	// Transport, when set, carries the http(s) requests (tests).
	Transport http.RoundTripper
}

// DefaultConfig is upstream's defaults: 30 minutes and 100 GB for http,
// 30 minutes for git, 100 GB and 4096 files for archives.
func DefaultConfig() Config {
	return Config{
		HTTPReadTimeout:             30 * time.Minute,
		HTTPMaxSize:                 100_000_000_000,
		GitTimeout:                  30 * time.Minute,
		DecompressionSizeLimit:      100_000_000_000,
		DecompressionFileCountLimit: 4096,
	}
}

// Getter fetches artifacts. It is safe for concurrent use.
type Getter struct {
	cfg    Config
	cache  *Cache // nil: no caching
	http   *http.Client
	logger hclog.Logger
}

// New returns a Getter with cfg; cache may be nil.
func New(cfg Config, cache *Cache, logger hclog.Logger) *Getter {
	tr := cfg.Transport
	if tr == nil {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	if logger == nil {
		logger = hclog.NewNullLogger()
	}
	return &Getter{cfg: cfg, cache: cache, http: &http.Client{Transport: tr}, logger: logger}
}

// Request is one artifact, its ${...} already resolved.
type Request struct {
	Source  string
	Options map[string]string
	Headers map[string]string
	// Mode is any, file or dir; empty means any.
	Mode string
	// Dest is the destination relative to TaskDir.
	Dest string
	// TaskDir is the task's directory: relative local sources and Dest
	// are resolved against it, and Dest must stay in its allocation's
	// directory (the task's directory or the shared ../alloc).
	TaskDir string
}

// Result says how an artifact was got.
type Result struct {
	// FromCache is true when no content was downloaded: a checksum hit,
	// a 304, or a stale copy.
	FromCache bool
	// Stale is set when the source could not be reached and the cached
	// copy was installed instead; it says why.
	Stale error
}

// Get fetches req into its destination.
func (g *Getter) Get(ctx context.Context, req Request) (Result, error) {
	dest, err := resolveDest(req.TaskDir, req.Dest)
	if err != nil {
		return Result{}, err
	}
	src, err := classify(req.Source)
	if err != nil {
		return Result{}, err
	}
	mode, err := getMode(req.Mode)
	if err != nil {
		return Result{}, err
	}
	if src.kind == kindHTTP {
		return g.getHTTP(ctx, src, req, dest, mode)
	}
	return g.getDirect(ctx, src, req, dest, mode)
}

func getMode(m string) (gg.Mode, error) {
	switch m {
	case "", "any":
		return gg.ModeAny, nil
	case "file":
		return gg.ModeFile, nil
	case "dir":
		return gg.ModeDir, nil
	}
	return gg.ModeInvalid, fmt.Errorf("%w: mode %q: must be one of any, file, dir", ErrBadRequest, m)
}

// resolveDest returns the absolute destination, refusing one outside the
// allocation directory: the task may use its own directory and the shared
// ../alloc. Symlinks already in the tree are checked, so that a task cannot
// point a link it made in an earlier run out of its sandbox and have the
// client write through it.
func resolveDest(taskDir, dest string) (string, error) {
	if taskDir == "" {
		return "", fmt.Errorf("%w: no task directory", ErrBadRequest)
	}
	dest = hostPathToRelative(taskDir, dest)
	rel := filepath.Clean(filepath.Join("task", dest))
	var root, sub string
	switch {
	case rel == "task" || strings.HasPrefix(rel, "task"+string(filepath.Separator)):
		root, sub = taskDir, strings.TrimPrefix(rel, "task")
	case rel == "alloc" || strings.HasPrefix(rel, "alloc"+string(filepath.Separator)):
		root, sub = filepath.Join(filepath.Dir(taskDir), "alloc"), strings.TrimPrefix(rel, "alloc")
	default:
		return "", fmt.Errorf("%w: destination %q", ErrDestEscapes, dest)
	}
	if err := checkNoEscapingLink(root, sub); err != nil {
		return "", fmt.Errorf("%w: destination %q: %v", ErrDestEscapes, dest, err)
	}
	return filepath.Join(root, sub), nil
}

// hostPathToRelative turns an absolute destination inside the allocation
// directory (what ${NOMAD_TASK_DIR} or ${NOMAD_ALLOC_DIR} interpolate to on
// the host) into one relative to the task's directory, as upstream treats
// such paths. Any other absolute path is left to be taken as relative to
// the task's directory.
func hostPathToRelative(taskDir, dest string) string {
	if !filepath.IsAbs(dest) {
		return dest
	}
	r, err := filepath.Rel(filepath.Dir(taskDir), dest)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return dest
	}
	task := filepath.Base(taskDir)
	if r == task || strings.HasPrefix(r, task+string(filepath.Separator)) {
		return "." + strings.TrimPrefix(r, task)
	}
	return filepath.Join("..", r) // the shared alloc/ or, refused, a sibling
}

// checkNoEscapingLink walks sub from root and fails on a component that is
// a symlink resolving outside root.
func checkNoEscapingLink(root, sub string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	cur := root
	for _, part := range strings.Split(strings.Trim(sub, string(filepath.Separator)), string(filepath.Separator)) {
		if part == "" {
			continue
		}
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return err
		}
		if r, err := filepath.Rel(realRoot, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s is a link out of the allocation directory", cur)
		}
	}
	return nil
}
