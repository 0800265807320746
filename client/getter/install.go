package getter

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	gg "github.com/hashicorp/go-getter/v2"
)

// decompressors returns go-getter's decompressors with the client's limits.
func (g *Getter) decompressors() map[string]gg.Decompressor {
	return gg.LimitedDecompressors(g.cfg.DecompressionFileCountLimit, g.cfg.DecompressionSizeLimit)
}

// archiveOf is the archive type of an http(s) artifact: the archive option
// ("false" for none), else the longest archive extension of the URL's path,
// as go-getter decides it. The option is removed from opts.
func archiveOf(urlPath string, opts map[string]string) (string, error) {
	if v, ok := opts["archive"]; ok {
		delete(opts, "archive")
		if b, err := strconv.ParseBool(v); err == nil && !b {
			return "", nil
		}
		if _, known := gg.Decompressors[v]; !known {
			return "", fmt.Errorf("%w: options: unknown archive type %q", ErrBadRequest, v)
		}
		return v, nil
	}
	best := ""
	for ext := range gg.Decompressors {
		if strings.HasSuffix(urlPath, "."+ext) && len(ext) > len(best) {
			best = ext
		}
	}
	return best, nil
}

// install puts a downloaded http(s) artifact (the file at blob) at dest
// with go-getter's semantics: an archive is unpacked into dest (or, in file
// mode, decompressed to dest); a plain file goes to dest in file mode, or
// into dest under the URL's file name (or the filename option) otherwise.
// A plain file is made executable, so that a task can run the binary it
// fetched, as upstream's executor does for a command in the task directory.
func (g *Getter) install(ctx context.Context, blob, urlPath, filename, archive, dest string, mode gg.Mode) error {
	target := dest
	getMode := mode
	if archive == "" {
		switch mode {
		case gg.ModeDir:
			return fmt.Errorf("%w: mode dir needs an archive, and %s is not one (set options { archive = \"<type>\" } if it is)", ErrBadRequest, path.Base(urlPath))
		case gg.ModeAny:
			name := filename
			if name == "" {
				name = path.Base(urlPath)
			}
			if name == "" || name == "." || name == "/" || strings.ContainsAny(name, `/\`) || name == ".." {
				return fmt.Errorf("%w: cannot tell a file name from %q; set mode = \"file\" and a destination", ErrBadRequest, urlPath)
			}
			target = filepath.Join(dest, name)
		}
		getMode = gg.ModeFile
	}
	src := blob
	if archive != "" {
		src += "?archive=" + archive
	}
	client := &gg.Client{
		Getters:         []gg.Getter{&gg.FileGetter{}},
		Decompressors:   g.decompressors(),
		DisableSymlinks: true,
	}
	// An archive is unpacked straight from blob (Inplace), not from a
	// copy in the system's temporary directory, which on a small device
	// may be a RAM disk.
	req := &gg.Request{Src: src, Dst: target, GetMode: getMode, Copy: true, Inplace: archive != "", DisableSymlinks: true}
	if _, err := client.Get(ctx, req); err != nil {
		return fmt.Errorf("installing the artifact: %w", err)
	}
	if archive == "" {
		if err := os.Chmod(target, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// getDirect hands a git or local-file artifact to go-getter; a git one
// goes through the cache when there is one (getGit).
func (g *Getter) getDirect(ctx context.Context, src source, req Request, dest string, mode gg.Mode) (Result, error) {
	if src.localPath != "" && !g.cfg.DisableFilesystemIsolation {
		if err := checkLocalSource(src.localPath, req.TaskDir); err != nil {
			return Result{}, err
		}
	}
	if c, ok := req.Options["checksum"]; ok {
		if _, _, err := parseChecksum(c); err != nil {
			return Result{}, err
		}
	}
	if src.git && g.cache != nil {
		return g.getGit(ctx, req, dest, mode)
	}
	return Result{}, g.fetchDirect(ctx, req, dest, mode)
}

// fetchDirect is go-getter's fetch of a git or local source into dest.
func (g *Getter) fetchDirect(ctx context.Context, req Request, dest string, mode gg.Mode) error {
	client := &gg.Client{
		Getters:         []gg.Getter{&gg.GitGetter{Timeout: g.cfg.GitTimeout}, &gg.FileGetter{}},
		Decompressors:   g.decompressors(),
		DisableSymlinks: true,
	}
	_, err := client.Get(ctx, &gg.Request{
		Src:             withOptions(req.Source, req.Options),
		Dst:             dest,
		Pwd:             req.TaskDir,
		GetMode:         mode,
		Copy:            true,
		DisableSymlinks: true,
	})
	if err != nil {
		return fmt.Errorf("getting %s: %w", req.Source, err)
	}
	return nil
}
