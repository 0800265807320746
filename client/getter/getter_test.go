package getter

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
)

// artifactServer serves files by path, with an ETag per content, counting
// the requests and the bodies it sent and keeping the last request's
// headers.
type artifactServer struct {
	*httptest.Server
	mu       sync.Mutex
	files    map[string][]byte
	requests int
	bodies   int
	last     http.Header
}

func newArtifactServer(t *testing.T, files map[string][]byte) *artifactServer {
	s := &artifactServer{files: files}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.requests++
		s.last = r.Header.Clone()
		b, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		sum := sha256.Sum256(b)
		etag := `"` + hex.EncodeToString(sum[:8]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		s.bodies++
		_, _ = w.Write(b)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *artifactServer) counts() (requests, bodies int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests, s.bodies
}

func (s *artifactServer) set(path string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[path] = b
}

// newTaskDir lays out <alloc>/<task>/local and <alloc>/alloc as the client
// does, returning the task directory.
func newTaskDir(t *testing.T) string {
	alloc := t.TempDir()
	td := filepath.Join(alloc, "web")
	must.NoError(t, os.MkdirAll(filepath.Join(td, "local"), 0o755))
	must.NoError(t, os.MkdirAll(filepath.Join(alloc, "alloc"), 0o755))
	return td
}

func newTestGetter(t *testing.T, cfg Config, cacheMax int64) (*Getter, *Cache) {
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"), cacheMax, clocktest.NewManual(time.Unix(1000, 0)))
	must.NoError(t, err)
	return New(cfg, c, nil), c
}

func sha256Of(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func tarGz(t *testing.T, files map[string]string) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		must.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o755, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(body))
		must.NoError(t, err)
	}
	must.NoError(t, tw.Close())
	must.NoError(t, gz.Close())
	return buf.Bytes()
}

// TestGet_HTTPFile checks a plain http download lands under its URL's
// file name in the destination, executable, so that raw_exec can run it.
func TestGet_HTTPFile(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/bin/app": []byte("#!/bin/sh\necho hi\n")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)

	res, err := g.Get(context.Background(), Request{Source: srv.URL + "/bin/app", Dest: "local/", TaskDir: td})
	must.NoError(t, err)
	must.False(t, res.FromCache)
	b, err := os.ReadFile(filepath.Join(td, "local", "app"))
	must.NoError(t, err)
	must.Eq(t, "#!/bin/sh\necho hi\n", string(b))
	fi, err := os.Stat(filepath.Join(td, "local", "app"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o755), fi.Mode().Perm())
}

// TestGet_FileModeAndSharedDir checks mode file writes the artifact at the
// destination itself, which may be in the group's shared ../alloc.
func TestGet_FileModeAndSharedDir(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/c.txt": []byte("conf")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/c.txt", Mode: "file", Dest: "../alloc/data/conf.txt", TaskDir: td})
	must.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(td), "alloc", "data", "conf.txt"))
	must.NoError(t, err)
	must.Eq(t, "conf", string(b))
}

// TestGet_ChecksumMismatch checks that content without the checksum its
// options give is refused, installed nowhere and not cached.
func TestGet_ChecksumMismatch(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("tampered")})
	g, c := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)
	_, err := g.Get(context.Background(), Request{
		Source: srv.URL + "/app", Dest: "local/", TaskDir: td,
		Options: map[string]string{"checksum": "sha256:" + sha256Of([]byte("original"))},
	})
	must.ErrorIs(t, err, ErrChecksumMismatch)
	must.FileNotExists(t, filepath.Join(td, "local", "app"))
	must.Eq(t, int64(0), c.Size())

	// The right checksum, in another type, passes.
	sum := md5Hex([]byte("tampered"))
	_, err = g.Get(context.Background(), Request{
		Source: srv.URL + "/app", Dest: "local/", TaskDir: td,
		Options: map[string]string{"checksum": "md5:" + sum},
	})
	must.NoError(t, err)
}

// TestGet_ArchiveUnpacked checks a .tar.gz is unpacked into the
// destination, keeping its files' modes, and that archive = "false" keeps
// it packed.
func TestGet_ArchiveUnpacked(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app.tar.gz": tarGz(t, map[string]string{"bin/app": "x", "etc/app.conf": "y"})})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app.tar.gz", Dest: "local/app", TaskDir: td})
	must.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(td, "local", "app", "etc", "app.conf"))
	must.NoError(t, err)
	must.Eq(t, "y", string(b))
	fi, err := os.Stat(filepath.Join(td, "local", "app", "bin", "app"))
	must.NoError(t, err)
	must.Eq(t, os.FileMode(0o755), fi.Mode().Perm())

	_, err = g.Get(context.Background(), Request{Source: srv.URL + "/app.tar.gz", Dest: "local/", TaskDir: td,
		Options: map[string]string{"archive": "false"}})
	must.NoError(t, err)
	must.FileExists(t, filepath.Join(td, "local", "app.tar.gz"))
}

// TestGet_DecompressionLimits checks the client's decompression_file_count_limit
// refuses an archive with more files than it allows.
func TestGet_DecompressionLimits(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/a.tgz": tarGz(t, map[string]string{"a": "1", "b": "2", "c": "3"})})
	cfg := DefaultConfig()
	cfg.DecompressionFileCountLimit = 2
	g, _ := newTestGetter(t, cfg, 1<<20)
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/a.tgz", Dest: "local/", TaskDir: newTaskDir(t)})
	must.ErrorContains(t, err, "2")
}

// TestGet_DestinationEscapeRefused checks a destination outside the
// allocation directory, or through a link a task left pointing out of
// it, is refused before anything is fetched.
func TestGet_DestinationEscapeRefused(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("x")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)
	for _, dest := range []string{"../../etc", "../other/local", "local/../../../x"} {
		_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: dest, TaskDir: td})
		must.ErrorIs(t, err, ErrDestEscapes, must.Sprint(dest))
	}
	outside := t.TempDir()
	must.NoError(t, os.Symlink(outside, filepath.Join(td, "local", "out")))
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/out", TaskDir: td})
	must.ErrorIs(t, err, ErrDestEscapes)
	must.FileNotExists(t, filepath.Join(outside, "app"))
	requests, _ := srv.counts()
	must.Eq(t, 0, requests)
}

// TestGet_HeadersSent checks the artifact's headers go with the request.
func TestGet_HeadersSent(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("x")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: newTaskDir(t),
		Headers: map[string]string{"Authorization": "Bearer t0ken", "X-Edge": "1"}})
	must.NoError(t, err)
	srv.mu.Lock()
	defer srv.mu.Unlock()
	must.Eq(t, "Bearer t0ken", srv.last.Get("Authorization"))
	must.Eq(t, "1", srv.last.Get("X-Edge"))
}

// TestGet_SizeLimit checks http_max_size refuses a larger body, whether
// or not the server announces its length, and installs nothing.
func TestGet_SizeLimit(t *testing.T) {
	big := bytes.Repeat([]byte("a"), 2048)
	srv := newArtifactServer(t, map[string][]byte{"/big": big})
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 4 {
			_, _ = w.Write(big[:512])
			w.(http.Flusher).Flush()
		}
		_, _ = w.Write([]byte("!"))
	}))
	t.Cleanup(chunked.Close)
	cfg := DefaultConfig()
	cfg.HTTPMaxSize = 2047
	g, c := newTestGetter(t, cfg, 1<<20)
	td := newTaskDir(t)
	for _, u := range []string{srv.URL + "/big", chunked.URL + "/big"} {
		_, err := g.Get(context.Background(), Request{Source: u, Dest: "local/", TaskDir: td})
		must.ErrorIs(t, err, ErrTooLarge, must.Sprint(u))
	}
	must.FileNotExists(t, filepath.Join(td, "local", "big"))
	must.Eq(t, int64(0), c.Size())
}

// TestGet_RefusedGetters checks that the getters this client does not
// build in are refused by name, with what to use instead.
func TestGet_RefusedGetters(t *testing.T) {
	g, _ := newTestGetter(t, DefaultConfig(), 0)
	for src, name := range map[string]string{
		"s3::https://s3.amazonaws.com/bucket/foo":      `"s3"`,
		"my-bucket.s3.eu-west-1.amazonaws.com/foo.tgz": `"s3"`,
		"gcs::https://www.googleapis.com/storage/v1/b": `"gcs"`,
		"www.googleapis.com/storage/v1/bucket/foo":     `"gcs"`,
		"hg::http://example.com/repo":                  `"hg"`,
		"smb://host/share/file":                        `"smb"`,
	} {
		_, err := g.Get(context.Background(), Request{Source: src, Dest: "local/", TaskDir: newTaskDir(t)})
		must.ErrorIs(t, err, ErrUnsupportedGetter, must.Sprint(src))
		must.ErrorContains(t, err, name)
	}
}

// TestGet_LocalFile checks a local source inside the allocation directory
// is copied, one outside it refused unless disable_filesystem_isolation.
func TestGet_LocalFile(t *testing.T) {
	td := newTaskDir(t)
	shared := filepath.Join(filepath.Dir(td), "alloc", "built.txt")
	must.NoError(t, os.WriteFile(shared, []byte("made by a prestart task"), 0o644))
	outside := filepath.Join(t.TempDir(), "secret")
	must.NoError(t, os.WriteFile(outside, []byte("host file"), 0o600))

	g, _ := newTestGetter(t, DefaultConfig(), 0)
	_, err := g.Get(context.Background(), Request{Source: "../alloc/built.txt", Mode: "file", Dest: "local/built.txt", TaskDir: td})
	must.NoError(t, err)
	must.FileExists(t, filepath.Join(td, "local", "built.txt"))

	_, err = g.Get(context.Background(), Request{Source: outside, Mode: "file", Dest: "local/secret", TaskDir: td})
	must.ErrorIs(t, err, ErrBadRequest)
	must.ErrorContains(t, err, "disable_filesystem_isolation")
	must.FileNotExists(t, filepath.Join(td, "local", "secret"))

	cfg := DefaultConfig()
	cfg.DisableFilesystemIsolation = true
	g = New(cfg, nil, nil)
	_, err = g.Get(context.Background(), Request{Source: "file://" + outside, Mode: "file", Dest: "local/secret", TaskDir: td})
	must.NoError(t, err)
}

// gitIn runs git in repo, as a test author.
func gitIn(t *testing.T, repo string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	must.NoError(t, err, must.Sprint(string(out)))
}

// newGitRepo makes a repository at repo whose v.txt is "v1" at tag v1 and
// "v2" at main, or skips the test without git.
func newGitRepo(t *testing.T, repo string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("skipping: no git binary on this machine")
	}
	must.NoError(t, os.MkdirAll(repo, 0o755))
	gitIn(t, repo, "init", "-q", "-b", "main")
	must.NoError(t, os.WriteFile(filepath.Join(repo, "v.txt"), []byte("v1"), 0o644))
	gitIn(t, repo, "add", "v.txt")
	gitIn(t, repo, "commit", "-q", "-m", "v1")
	gitIn(t, repo, "tag", "v1")
	must.NoError(t, os.WriteFile(filepath.Join(repo, "v.txt"), []byte("v2"), 0o644))
	gitIn(t, repo, "commit", "-q", "-am", "v2")
}

// TestGet_Git checks a git source is cloned at the ref its options name.
func TestGet_Git(t *testing.T) {
	td := newTaskDir(t)
	repo := filepath.Join(filepath.Dir(td), "alloc", "repo")
	newGitRepo(t, repo)

	cfg := DefaultConfig()
	cfg.GitTimeout = time.Minute
	g, _ := newTestGetter(t, cfg, 0)
	_, err := g.Get(context.Background(), Request{Source: "git::file://" + repo, Dest: "local/repo", TaskDir: td,
		Options: map[string]string{"ref": "v1"}})
	must.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(td, "local", "repo", "v.txt"))
	must.NoError(t, err)
	must.Eq(t, "v1", string(b))
}

func md5Hex(b []byte) string {
	h := newHash("md5")
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil))
}

// TestGet_HostPathDestination checks an absolute destination inside the
// allocation directory, as ${NOMAD_TASK_DIR} or ${NOMAD_ALLOC_DIR}
// interpolate on the host, lands there; one in a sibling task's directory
// is refused; any other absolute path is taken inside the task directory.
func TestGet_HostPathDestination(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("x")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	td := newTaskDir(t)
	alloc := filepath.Dir(td)
	for dest, want := range map[string]string{
		filepath.Join(td, "local", "bin"):  filepath.Join(td, "local", "bin", "app"),
		filepath.Join(alloc, "alloc", "d"): filepath.Join(alloc, "alloc", "d", "app"),
		"/opt/app":                         filepath.Join(td, "opt", "app", "app"),
	} {
		_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: dest, TaskDir: td})
		must.NoError(t, err, must.Sprint(dest))
		must.FileExists(t, want)
	}
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: filepath.Join(alloc, "other", "local"), TaskDir: td})
	must.ErrorIs(t, err, ErrDestEscapes)
}
