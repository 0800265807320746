package getter

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	gg "github.com/hashicorp/go-getter/v2"
)

// getGit clones a git artifact into a scratch directory of the cache,
// keeps the tree (its .git included) as a tar entry keyed by the source and
// its options, and installs from that. When the clone fails and the cache
// holds a copy of the same source and ref, the copy is installed instead
// (Result.Stale), as an unreachable http(s) server's is: a task that must
// clone again while the node is cut off starts with what it had.
func (g *Getter) getGit(ctx context.Context, req Request, dest string, mode gg.Mode) (Result, error) {
	key := "git:" + withOptions(req.Source, req.Options)
	scratch, err := os.MkdirTemp(g.cache.dir, "download-*.tmp")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(scratch)
	clone := filepath.Join(scratch, "clone")
	if err := g.fetchDirect(ctx, req, clone, mode); err != nil {
		if ctx.Err() != nil {
			return Result{}, err
		}
		e, link := g.cache.lookup(key)
		if e == nil {
			return Result{}, err
		}
		defer os.Remove(link)
		if verify(e, link) != nil {
			g.cache.drop(key)
			return Result{}, err
		}
		g.logger.Warn("git remote unreachable: installing the cached clone", "source", e.Source, "error", err)
		g.cache.touch(key, "", "")
		stale := fmt.Errorf("%w: %v", errUnreachable, err)
		return Result{FromCache: true, Stale: stale}, untarTree(link, dest)
	}
	blob := filepath.Join(scratch, "clone.tar")
	size, sum, err := tarTree(clone, blob)
	if err != nil {
		return Result{}, fmt.Errorf("keeping the clone: %w", err)
	}
	if err := untarTree(blob, dest); err != nil {
		return Result{}, err
	}
	// Options may hold an sshkey: the record names the source without them.
	g.cache.commit(key, blob, cacheEntry{Source: req.Source, Size: size, SHA256: sum})
	return Result{}, nil
}

// tarTree writes the tree under root to a tar file at path, synced, and
// returns its size and SHA-256.
func tarTree(root, path string) (int64, string, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(f, h))
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		hdr.Name = filepath.ToSlash(rel)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		return 0, "", err
	}
	st, err := f.Stat()
	if err != nil {
		return 0, "", err
	}
	return st.Size(), hex.EncodeToString(h.Sum(nil)), nil
}

// errTreeEscapes is a kept tree's entry that would land outside its
// destination: a name with "..", or a link pointing out of it.
var errTreeEscapes = errors.New("kept clone has an entry outside its destination")

// untarTree unpacks a tar file tarTree wrote into dest, modes kept. A
// symlink must point inside dest, as a clone's own links do.
func untarTree(path, dest string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(hdr.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%w: %q", errTreeEscapes, hdr.Name)
		}
		target := filepath.Join(dest, name)
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, mode|0o700)
		case tar.TypeReg:
			err = writeFile(target, tr, mode)
		case tar.TypeSymlink:
			if filepath.IsAbs(hdr.Linkname) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), hdr.Linkname)) {
				return fmt.Errorf("%w: link %q to %q", errTreeEscapes, hdr.Name, hdr.Linkname)
			}
			_ = os.Remove(target)
			err = os.Symlink(hdr.Linkname, target)
		default:
			err = fmt.Errorf("kept clone: entry %q of type %q", hdr.Name, strings.TrimSpace(string(hdr.Typeflag)))
		}
		if err != nil {
			return err
		}
	}
}

func writeFile(path string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
