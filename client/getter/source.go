package getter

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

type sourceKind int

const (
	// kindHTTP is fetched by getHTTP, through the cache.
	kindHTTP sourceKind = iota
	// kindDirect (git, local files) is handed to go-getter as it is.
	kindDirect
)

// source is a classified artifact source.
type source struct {
	kind sourceKind
	// url is the http(s) URL, for kindHTTP.
	url *url.URL
	// localPath is set for a source that names a path on this host (a
	// local file or a local git repository), as written.
	localPath string
	// git is set for a git repository (forced with git::, or a remote
	// shorthand go-getter detects as git), which the cache keeps as a
	// tree.
	git bool
}

// forcedRE matches go-getter's "getter::" prefix.
var forcedRE = regexp.MustCompile(`^([A-Za-z0-9]+)::(.+)$`)

// refused are the getters go-getter has that this client does not enable,
// with what to do instead.
var refused = map[string]string{
	"s3":  "the s3 getter is not built into this client; use an https URL (a presigned or public object URL)",
	"gcs": "the gcs getter is not built into this client; use an https URL (a signed or public object URL)",
	"hg":  "the hg (Mercurial) getter is not built into this client; use git or an archive over https",
	"smb": "the smb getter is not built into this client; use https, git or a local path",
}

// classify tells how src is fetched, refusing the getters this client does
// not enable by name.
func classify(src string) (source, error) {
	if src == "" {
		return source{}, fmt.Errorf("%w: source is empty", ErrBadRequest)
	}
	forced, rest := "", src
	if m := forcedRE.FindStringSubmatch(src); m != nil {
		forced, rest = strings.ToLower(m[1]), m[2]
	}
	if why, ok := refused[forced]; ok {
		return source{}, fmt.Errorf("%w %q in source %q: %s", ErrUnsupportedGetter, forced, src, why)
	}
	scheme := ""
	u, err := url.Parse(rest)
	if err == nil {
		scheme = strings.ToLower(u.Scheme)
	}
	if why, ok := refused[scheme]; ok {
		return source{}, fmt.Errorf("%w %q in source %q: %s", ErrUnsupportedGetter, scheme, src, why)
	}
	if forced == "" && scheme == "" {
		// go-getter's detectors would send these to its s3 and gcs getters.
		host, _, _ := strings.Cut(rest, "/")
		switch {
		case strings.HasSuffix(host, ".amazonaws.com") && strings.Contains(host, "s3"):
			return source{}, fmt.Errorf("%w %q in source %q: %s", ErrUnsupportedGetter, "s3", src, refused["s3"])
		case host == "www.googleapis.com" || host == "storage.googleapis.com":
			return source{}, fmt.Errorf("%w %q in source %q: %s", ErrUnsupportedGetter, "gcs", src, refused["gcs"])
		}
	}
	isHTTP := scheme == "http" || scheme == "https"
	switch forced {
	case "", "http", "https":
		if isHTTP {
			return source{kind: kindHTTP, url: u}, nil
		}
		if forced != "" {
			return source{}, fmt.Errorf("%w: source %q is forced to %s but is not an http(s) URL", ErrBadRequest, src, forced)
		}
	case "git", "file":
	default:
		return source{}, fmt.Errorf("%w %q in source %q", ErrUnsupportedGetter, forced, src)
	}
	out := source{kind: kindDirect, git: forced == "git"}
	switch {
	case scheme == "file":
		out.localPath = u.Path
	case scheme == "" && isLocalPath(rest):
		out.localPath, _, _ = strings.Cut(rest, "?")
	}
	out.git = out.git || out.localPath == ""
	return out, nil
}

// isLocalPath reports whether a scheme-less source names a path on this
// host rather than one of go-getter's remote shorthands (github.com/...,
// git@host:repo).
func isLocalPath(s string) bool {
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		return true
	}
	for _, remote := range []string{"github.com/", "gitlab.com/", "bitbucket.org/"} {
		if strings.HasPrefix(s, remote) {
			return false
		}
	}
	if at, colon := strings.Index(s, "@"), strings.Index(s, ":"); at >= 0 && colon > at {
		return false // scp-like git@host:repo
	}
	return true
}

// checkLocalSource refuses a local path outside the task's allocation
// directory: without filesystem isolation turned off, a job may not copy
// the client host's files into its sandbox.
func checkLocalSource(path, taskDir string) error {
	if !filepath.IsAbs(path) {
		path = filepath.Join(taskDir, path)
	}
	path = filepath.Clean(path)
	allocDir := filepath.Dir(taskDir)
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	} else if !os.IsNotExist(err) {
		return err
	}
	if realAlloc, err := filepath.EvalSymlinks(allocDir); err == nil {
		allocDir = realAlloc
	}
	rel, err := filepath.Rel(allocDir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: local source %q is outside the allocation directory (the client's artifact block has disable_filesystem_isolation = false)", ErrBadRequest, path)
	}
	return nil
}

// withOptions appends the artifact's options to src as go-getter's query
// parameters.
func withOptions(src string, opts map[string]string) string {
	if len(opts) == 0 {
		return src
	}
	q := url.Values{}
	for k, v := range opts {
		q.Set(k, v)
	}
	sep := "?"
	if strings.Contains(src, "?") {
		sep = "&"
	}
	return src + sep + q.Encode()
}
