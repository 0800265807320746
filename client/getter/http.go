package getter

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"

	gg "github.com/hashicorp/go-getter/v2"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// errUnreachable marks a failure that says nothing about the artifact,
// only that its server could not be reached or could not serve: a cached
// copy may stand in for it.
var errUnreachable = errors.New("artifact server unreachable")

// getHTTP fetches an http(s) artifact through the cache and installs it.
func (g *Getter) getHTTP(ctx context.Context, src source, req Request, dest string, mode gg.Mode) (Result, error) {
	opts := maps.Clone(req.Options)
	var sumType, sumValue string
	if c, ok := opts["checksum"]; ok {
		var err error
		if sumType, sumValue, err = parseChecksum(c); err != nil {
			return Result{}, err
		}
		delete(opts, "checksum")
	}
	archive, err := archiveOf(src.url.Path, opts)
	if err != nil {
		return Result{}, err
	}
	filename := opts["filename"]
	delete(opts, "filename")
	u := *src.url
	if len(opts) > 0 {
		// Other options are the URL's query parameters, as go-getter
		// passes them.
		q := u.Query()
		for k, v := range opts {
			q.Set(k, v)
		}
		u.RawQuery = q.Encode()
	}

	key := urlKey(u.String(), req.Headers)
	var cached *cacheEntry
	var link string
	if sumType != "" {
		// The checksum names the content: a cached copy of it needs no
		// request at all.
		key = "checksum:" + sumType + ":" + sumValue
		if e, l := g.cache.lookup(key); e != nil {
			defer os.Remove(l)
			if err := verify(e, l); err == nil {
				g.cache.touch(key, "", "")
				return Result{FromCache: true}, g.install(ctx, l, u.Path, filename, archive, dest, mode)
			}
			g.cache.drop(key)
		}
	} else if cached, link = g.cache.lookup(key); cached != nil {
		defer os.Remove(link)
		if verify(cached, link) != nil {
			g.cache.drop(key)
			cached = nil
		}
	}

	dl, err := g.download(ctx, u.String(), req.Headers, cached, sumType, sumValue)
	switch {
	case err != nil && cached != nil && errors.Is(err, errUnreachable):
		g.logger.Warn("artifact server unreachable: installing the cached copy", "source", u.Redacted(), "error", err)
		g.cache.touch(key, "", "")
		return Result{FromCache: true, Stale: err}, g.install(ctx, link, u.Path, filename, archive, dest, mode)
	case err != nil:
		return Result{}, err
	case dl.notModified:
		g.cache.touch(key, dl.etag, dl.lastModified)
		return Result{FromCache: true}, g.install(ctx, link, u.Path, filename, archive, dest, mode)
	}
	defer os.Remove(dl.path)
	if err := g.install(ctx, dl.path, u.Path, filename, archive, dest, mode); err != nil {
		return Result{}, err
	}
	if g.cache != nil {
		g.cache.commit(key, dl.path, cacheEntry{
			Source: u.Redacted(), Size: dl.size, SHA256: dl.sha256,
			ETag: dl.etag, LastModified: dl.lastModified,
		})
	}
	return Result{}, nil
}

// urlKey is the cache key of a URL fetched with headers: the same URL with
// other headers (a token, an Accept) may be other content.
func urlKey(u string, headers map[string]string) string {
	var b strings.Builder
	b.WriteString("url:")
	b.WriteString(u)
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		fmt.Fprintf(&b, "\n%s: %s", http.CanonicalHeaderKey(k), headers[k])
	}
	return b.String()
}

// download is one GET's outcome.
type download struct {
	notModified        bool
	path               string // the body, in a temporary file
	size               int64
	sha256             string
	etag, lastModified string
}

// download GETs rawURL into a temporary file, conditionally when cached has
// validators, checking the size limit and the checksum as it reads.
func (g *Getter) download(ctx context.Context, rawURL string, headers map[string]string, cached *cacheEntry, sumType, sumValue string) (download, error) {
	if g.cfg.HTTPReadTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.cfg.HTTPReadTimeout)
		defer cancel()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return download{}, fmt.Errorf("%w: source: %v", ErrBadRequest, err)
	}
	for k, v := range headers {
		hreq.Header.Set(k, v)
	}
	if cached != nil {
		if cached.ETag != "" {
			hreq.Header.Set("If-None-Match", cached.ETag)
		}
		if cached.LastModified != "" {
			hreq.Header.Set("If-Modified-Since", cached.LastModified)
		}
	}
	resp, err := g.http.Do(hreq)
	if err != nil {
		return download{}, fmt.Errorf("%w: %w", errUnreachable, err)
	}
	defer resp.Body.Close()
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")
	switch {
	case resp.StatusCode == http.StatusNotModified && cached != nil:
		return download{notModified: true, etag: etag, lastModified: lastMod}, nil
	case resp.StatusCode >= 500:
		return download{}, fmt.Errorf("%w: bad response code: %d", errUnreachable, resp.StatusCode)
	case resp.StatusCode != http.StatusOK:
		return download{}, fmt.Errorf("bad response code: %d", resp.StatusCode)
	}
	max := g.cfg.HTTPMaxSize
	if max > 0 && resp.ContentLength > max {
		return download{}, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, resp.ContentLength, max)
	}

	f, err := g.tempFile()
	if err != nil {
		return download{}, err
	}
	keep := false
	defer func() {
		if !keep {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	sha := sha256.New()
	var sum hash.Hash
	writers := []io.Writer{f, sha}
	if sumType != "" && sumType != "sha256" {
		sum = newHash(sumType)
		writers = append(writers, sum)
	}
	body := io.Reader(resp.Body)
	if max > 0 {
		body = io.LimitReader(resp.Body, max+1)
	}
	n, err := io.Copy(io.MultiWriter(writers...), body)
	if err != nil {
		return download{}, fmt.Errorf("%w: reading the body: %w", errUnreachable, err)
	}
	if max > 0 && n > max {
		return download{}, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)
	}
	got := hex.EncodeToString(sha.Sum(nil))
	if sumType != "" {
		actual := got
		if sum != nil {
			actual = hex.EncodeToString(sum.Sum(nil))
		}
		if actual != sumValue {
			return download{}, fmt.Errorf("%w: expected %s %s, got %s", ErrChecksumMismatch, sumType, sumValue, actual)
		}
	}
	if err := f.Sync(); err != nil {
		return download{}, err
	}
	if err := f.Close(); err != nil {
		return download{}, err
	}
	keep = true
	return download{path: f.Name(), size: n, sha256: got, etag: etag, lastModified: lastMod}, nil
}

func newHash(typ string) hash.Hash {
	switch typ {
	case "md5":
		return md5.New()
	case "sha1":
		return sha1.New()
	case "sha512":
		return sha512.New()
	}
	return sha256.New()
}

// tempFile is where a download goes: the cache's directory when there is
// a cache (committing it is then a rename), the system's otherwise.
func (g *Getter) tempFile() (*os.File, error) {
	if g.cache != nil {
		return g.cache.tempFile()
	}
	return os.CreateTemp("", "artifact-*.tmp")
}

// parseChecksum checks a checksum option ("type:value").
func parseChecksum(c string) (typ, value string, err error) {
	typ, value, err = structs.ParseArtifactChecksum(c)
	if err != nil {
		return "", "", fmt.Errorf("%w: options: %v", ErrBadRequest, err)
	}
	return typ, value, nil
}
