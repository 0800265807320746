package getter

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/atomicfile"
	"github.com/nomad-edge/nomad/helper/clock"
)

// Cache keeps downloaded artifacts on the client's disk by content key (a
// checksum, or a URL with its headers), at most maxBytes of them, evicting
// the least recently used. Every entry is a blob and a small JSON record
// beside it, written to a temporary name, synced and renamed, so that a
// power cut leaves either the old entry or the new one. It is safe for
// concurrent use.
type Cache struct {
	dir   string
	max   int64
	clock clock.Clock

	mu      sync.Mutex
	entries map[string]*cacheEntry // by ID
	size    int64
	reads   int // names the links lookup makes
}

// cacheEntry is one cached artifact, as persisted in <ID>.json.
type cacheEntry struct {
	// ID names the entry's files: the hex SHA-256 of its key.
	ID string
	// Source is the URL the content came from (for operators reading
	// the directory; headers are never written, they may hold secrets).
	Source string
	Size   int64
	// SHA256 is the content's, checked before a cached copy is used.
	SHA256 string
	// ETag and LastModified are the server's validators, sent back in a
	// conditional GET.
	ETag         string `json:",omitempty"`
	LastModified string `json:",omitempty"`
	LastUsed     time.Time
}

// OpenCache opens (creating) a cache under dir bounded to maxBytes. A
// maxBytes of zero or less disables caching: OpenCache returns nil.
// Records without their blob and blobs without their record, left by a
// crash, are removed.
func OpenCache(dir string, maxBytes int64, clk clock.Clock) (*Cache, error) {
	if maxBytes <= 0 {
		return nil, nil
	}
	if clk == nil {
		clk = clock.Real()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("artifact cache: %w", err)
	}
	c := &Cache{dir: dir, max: maxBytes, clock: clk, entries: map[string]*cacheEntry{}}
	names, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("artifact cache: %w", err)
	}
	blobs := map[string]bool{}
	for _, de := range names {
		name := de.Name()
		switch {
		case strings.HasSuffix(name, ".blob"):
			blobs[strings.TrimSuffix(name, ".blob")] = true
		case strings.HasSuffix(name, ".json"):
			var e cacheEntry
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				err = json.Unmarshal(b, &e)
			}
			if err != nil || e.ID+".json" != name {
				_ = os.Remove(filepath.Join(dir, name))
				continue
			}
			c.entries[e.ID] = &e
		default:
			_ = os.RemoveAll(filepath.Join(dir, name)) // a download (or a clone) cut short
		}
	}
	for id, e := range c.entries {
		if !blobs[id] {
			delete(c.entries, id)
			_ = os.Remove(c.recordPath(id))
			continue
		}
		c.size += e.Size
	}
	for id := range blobs {
		if c.entries[id] == nil {
			_ = os.Remove(c.blobPath(id))
		}
	}
	c.mu.Lock()
	c.evictLocked(0)
	c.mu.Unlock()
	return c, nil
}

func cacheID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

func (c *Cache) blobPath(id string) string   { return filepath.Join(c.dir, id+".blob") }
func (c *Cache) recordPath(id string) string { return filepath.Join(c.dir, id+".json") }

// lookup returns a copy of key's entry and a private hard link to its
// blob, which the caller installs from and removes; the link keeps the
// content readable whatever the cache evicts or replaces meanwhile. It
// returns nil when key is not cached.
func (c *Cache) lookup(key string) (*cacheEntry, string) {
	if c == nil {
		return nil, ""
	}
	id := cacheID(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e == nil {
		return nil, ""
	}
	link := filepath.Join(c.dir, fmt.Sprintf("read-%s-%d.tmp", id[:16], c.reads))
	c.reads++
	if err := os.Link(c.blobPath(id), link); err != nil {
		c.removeLocked(id) // its blob is gone
		return nil, ""
	}
	cp := *e
	return &cp, link
}

// touch marks key's entry used now, with fresh validators when given.
func (c *Cache) touch(key, etag, lastModified string) {
	if c == nil {
		return
	}
	id := cacheID(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[id]
	if e == nil {
		return
	}
	e.LastUsed = c.clock.Now().UTC()
	if etag != "" {
		e.ETag = etag
	}
	if lastModified != "" {
		e.LastModified = lastModified
	}
	_ = c.writeRecordLocked(e)
}

// drop removes key's entry (its blob failed its checksum).
func (c *Cache) drop(key string) {
	if c == nil {
		return
	}
	id := cacheID(key)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id)
}

// tempFile returns a new file in the cache's directory for a download,
// so that committing it is a rename on the same filesystem.
func (c *Cache) tempFile() (*os.File, error) { return os.CreateTemp(c.dir, "download-*.tmp") }

// commit moves a finished download (synced and closed by the caller) into
// the cache under key, evicting the least recently used entries to make
// room. A download larger than the whole cache is not kept; the caller
// removes tmp if it is still there.
func (c *Cache) commit(key, tmp string, e cacheEntry) {
	if c == nil || e.Size > c.max {
		return
	}
	id := cacheID(key)
	e.ID = id
	e.LastUsed = c.clock.Now().UTC()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.removeLocked(id) // the older copy of the same key
	c.evictLocked(e.Size)
	if err := os.Rename(tmp, c.blobPath(id)); err != nil {
		return
	}
	if err := c.writeRecordLocked(&e); err != nil {
		_ = os.Remove(c.blobPath(id))
		return
	}
	syncDir(c.dir)
	c.entries[id] = &e
	c.size += e.Size
}

// evictLocked removes least recently used entries until need more bytes
// fit.
func (c *Cache) evictLocked(need int64) {
	for c.size+need > c.max {
		var victim *cacheEntry
		for _, e := range c.entries {
			if victim == nil || e.LastUsed.Before(victim.LastUsed) {
				victim = e
			}
		}
		if victim == nil {
			return
		}
		c.removeLocked(victim.ID)
	}
}

func (c *Cache) removeLocked(id string) {
	e := c.entries[id]
	if e == nil {
		return
	}
	delete(c.entries, id)
	c.size -= e.Size
	_ = os.Remove(c.recordPath(id))
	_ = os.Remove(c.blobPath(id))
}

func (c *Cache) writeRecordLocked(e *cacheEntry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	return atomicfile.Write(c.recordPath(e.ID), b, 0o600)
}

// Size returns the bytes the cache holds.
func (c *Cache) Size() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.size
}

// verify checks that the file at path (a lookup's link) has e's SHA-256.
func verify(e *cacheEntry, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return errors.New("cached copy is damaged")
	}
	return nil
}

func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
