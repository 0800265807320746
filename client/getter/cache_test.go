package getter

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
)

// TestCache_ServerDownAfterReboot checks the offline reboot: a client
// restarted (a new Cache on the same directory) while the artifact's
// server is unreachable installs the copy it already has, and says so,
// instead of failing.
func TestCache_ServerDownAfterReboot(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/bin/app": []byte("v1")})
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := OpenCache(dir, 1<<20, nil)
	must.NoError(t, err)
	_, err = New(DefaultConfig(), c, nil).Get(context.Background(), Request{Source: srv.URL + "/bin/app", Dest: "local/", TaskDir: newTaskDir(t)})
	must.NoError(t, err)
	srv.Close()

	c, err = OpenCache(dir, 1<<20, nil)
	must.NoError(t, err)
	td := newTaskDir(t)
	res, err := New(DefaultConfig(), c, nil).Get(context.Background(), Request{Source: srv.URL + "/bin/app", Dest: "local/", TaskDir: td})
	must.NoError(t, err)
	must.True(t, res.FromCache)
	must.Error(t, res.Stale)
	b, err := os.ReadFile(filepath.Join(td, "local", "app"))
	must.NoError(t, err)
	must.Eq(t, "v1", string(b))
}

// TestCache_ServerErrorUsesCopy checks a 5xx counts as unreachable (the
// server cannot serve) but a 404 does not: the artifact is gone, and the
// fetch fails.
func TestCache_ServerErrorUsesCopy(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("v1")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	_, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: newTaskDir(t)})
	must.NoError(t, err)

	status := http.StatusServiceUnavailable
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(status) }))
	t.Cleanup(proxy.Close)
	// Same URL key: point the getter's transport at the failing server.
	g.http.Transport = rewriteHost{to: proxy.Listener.Addr().String()}
	res, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: newTaskDir(t)})
	must.NoError(t, err)
	must.NotNil(t, res.Stale)

	status = http.StatusNotFound
	_, err = g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: newTaskDir(t)})
	must.ErrorContains(t, err, "bad response code: 404")
}

type rewriteHost struct{ to string }

func (r rewriteHost) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.URL.Host = r.to
	return http.DefaultTransport.RoundTrip(req)
}

// TestCache_ConditionalGet checks that a fetch of a cached URL sends the
// server's ETag back and does not download the body again when the server
// answers 304, and does when the content changed.
func TestCache_ConditionalGet(t *testing.T) {
	srv := newArtifactServer(t, map[string][]byte{"/app": []byte("v1")})
	g, _ := newTestGetter(t, DefaultConfig(), 1<<20)
	get := func() (Result, string) {
		td := newTaskDir(t)
		res, err := g.Get(context.Background(), Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: td})
		must.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(td, "local", "app"))
		must.NoError(t, err)
		return res, string(b)
	}
	_, body := get()
	must.Eq(t, "v1", body)
	res, body := get()
	must.Eq(t, "v1", body)
	must.True(t, res.FromCache)
	must.Nil(t, res.Stale)
	requests, bodies := srv.counts()
	must.Eq(t, 2, requests)
	must.Eq(t, 1, bodies)

	srv.set("/app", []byte("v2"))
	res, body = get()
	must.Eq(t, "v2", body)
	must.False(t, res.FromCache)
	_, bodies = srv.counts()
	must.Eq(t, 2, bodies)
}

// TestCache_ChecksumHit checks that an artifact whose checksum is cached
// is installed without any request, and that a damaged cached copy is
// dropped and fetched again rather than installed.
func TestCache_ChecksumHit(t *testing.T) {
	content := []byte("release-1.2.3")
	srv := newArtifactServer(t, map[string][]byte{"/app": content})
	g, c := newTestGetter(t, DefaultConfig(), 1<<20)
	req := func(td string) Request {
		return Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: td,
			Options: map[string]string{"checksum": "sha256:" + sha256Of(content)}}
	}
	_, err := g.Get(context.Background(), req(newTaskDir(t)))
	must.NoError(t, err)
	res, err := g.Get(context.Background(), req(newTaskDir(t)))
	must.NoError(t, err)
	must.True(t, res.FromCache)
	requests, _ := srv.counts()
	must.Eq(t, 1, requests)

	// Damage the blob, as a power cut on a careless filesystem might.
	key := "checksum:sha256:" + sha256Of(content)
	must.NoError(t, os.WriteFile(c.blobPath(cacheID(key)), []byte("garbage"), 0o600))
	td := newTaskDir(t)
	res, err = g.Get(context.Background(), req(td))
	must.NoError(t, err)
	must.False(t, res.FromCache)
	b, err := os.ReadFile(filepath.Join(td, "local", "app"))
	must.NoError(t, err)
	must.Eq(t, string(content), string(b))
}

// TestCache_EvictsLeastRecentlyUsed checks the size bound: adding past it
// evicts the entry used longest ago, and an artifact larger than the whole
// cache is installed but not kept.
func TestCache_EvictsLeastRecentlyUsed(t *testing.T) {
	clk := clocktest.NewManual(time.Unix(1000, 0))
	srv := newArtifactServer(t, map[string][]byte{
		"/a": make([]byte, 40), "/b": make([]byte, 40), "/c": make([]byte, 40), "/huge": make([]byte, 200),
	})
	c, err := OpenCache(filepath.Join(t.TempDir(), "cache"), 100, clk)
	must.NoError(t, err)
	g := New(DefaultConfig(), c, nil)
	get := func(p string) {
		_, err := g.Get(context.Background(), Request{Source: srv.URL + p, Dest: "local/", TaskDir: newTaskDir(t)})
		must.NoError(t, err)
		clk.Advance(time.Second)
	}
	cachedURL := func(p string) bool {
		e, link := c.lookup(urlKey(srv.URL+p, nil))
		if link != "" {
			os.Remove(link)
		}
		return e != nil
	}
	get("/a")
	get("/b")
	get("/a") // a is now the most recently used
	get("/c") // 120 > 100: b goes
	must.True(t, cachedURL("/a"))
	must.False(t, cachedURL("/b"))
	must.True(t, cachedURL("/c"))
	must.Eq(t, int64(80), c.Size())

	get("/huge")
	must.False(t, cachedURL("/huge"))
	must.Eq(t, int64(80), c.Size())
}

// TestOpenCache_RemovesDebris checks a download cut short by a crash and a
// record without its blob are cleaned up when the cache opens, and that a
// cache of size zero is off.
func TestOpenCache_RemovesDebris(t *testing.T) {
	dir := t.TempDir()
	must.NoError(t, os.WriteFile(filepath.Join(dir, "download-1.tmp"), []byte("half"), 0o600))
	must.NoError(t, os.WriteFile(filepath.Join(dir, cacheID("k")+".json"), []byte(`{"ID":"`+cacheID("k")+`","Size":3}`), 0o600))
	c, err := OpenCache(dir, 10, nil)
	must.NoError(t, err)
	must.Eq(t, int64(0), c.Size())
	names, err := os.ReadDir(dir)
	must.NoError(t, err)
	must.SliceEmpty(t, names)

	off, err := OpenCache(dir, 0, nil)
	must.NoError(t, err)
	must.Nil(t, off)
}

// TestCache_ConditionalGetLastModified checks a server that sends only
// Last-Modified is asked with If-Modified-Since and its 304 keeps the
// cached copy; and that headers, which may carry tokens, key the entry
// but are never written to the cache's records.
func TestCache_ConditionalGetLastModified(t *testing.T) {
	modified := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	bodies := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-Modified-Since") == "" {
			bodies++
		}
		http.ServeContent(w, r, "app", modified, bytes.NewReader([]byte("v1")))
	}))
	t.Cleanup(srv.Close)
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := OpenCache(dir, 1<<20, nil)
	must.NoError(t, err)
	g := New(DefaultConfig(), c, nil)
	req := func() Request {
		return Request{Source: srv.URL + "/app", Dest: "local/", TaskDir: newTaskDir(t),
			Headers: map[string]string{"Authorization": "Bearer s3cr3t"}}
	}
	_, err = g.Get(context.Background(), req())
	must.NoError(t, err)
	res, err := g.Get(context.Background(), req())
	must.NoError(t, err)
	must.True(t, res.FromCache)
	must.Eq(t, 1, bodies)

	names, err := os.ReadDir(dir)
	must.NoError(t, err)
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		must.NoError(t, err)
		must.False(t, bytes.Contains(b, []byte("s3cr3t")), must.Sprint(n.Name()))
	}
}

// stallTransport never answers: it waits for the request's context.
type stallTransport struct{}

func (stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	<-req.Context().Done()
	return nil, req.Context().Err()
}

// TestGet_HTTPReadTimeout checks http_read_timeout ends a download that
// does not finish, on the (fake) clock, rather than hanging the task's
// start for ever.
func TestGet_HTTPReadTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.HTTPReadTimeout = time.Minute
		cfg.Transport = stallTransport{}
		g := New(cfg, nil, nil)
		start := time.Now()
		_, err := g.Get(context.Background(), Request{Source: "https://stalled.example/app", Dest: "local/", TaskDir: newTaskDir(t)})
		must.ErrorIs(t, err, context.DeadlineExceeded)
		must.Eq(t, time.Minute, time.Since(start))
	})
}
