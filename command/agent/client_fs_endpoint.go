package agent

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
)

// AllocFileInfo is one entry of `nomad alloc fs`, as upstream's.
type AllocFileInfo struct {
	Name        string
	IsDir       bool
	Size        int64
	FileMode    string
	ModTime     time.Time
	ContentType string `json:",omitempty"`
}

// allocPath turns the path parameter into a name inside the allocation
// directory. Paths are rooted at the allocation directory, as upstream's
// ("/alloc/logs"), so a leading "/" names that root and never the host's;
// ".." is refused outright, and os.Root refuses symlinks that lead out.
func allocPath(p string) (string, error) {
	p = strings.TrimPrefix(p, "/")
	if p == "" {
		return ".", nil
	}
	for _, el := range strings.Split(p, "/") {
		if el == ".." {
			return "", codedErrorf(http.StatusBadRequest, "Invalid path %q: \"..\" is not allowed; paths are inside the allocation directory", p)
		}
	}
	if strings.ContainsRune(p, 0) || !filepath.IsLocal(p) {
		return "", codedErrorf(http.StatusBadRequest, "Invalid path %q: must name a file inside the allocation directory", p)
	}
	return path.Clean(p), nil
}

// openAllocRoot opens the allocation directory as the root every fs read
// is confined to.
func openAllocRoot(ar *allocrunner.AllocRunner) (*os.Root, error) {
	root, err := os.OpenRoot(ar.Dir().Dir)
	if err != nil {
		return nil, codedErrorf(http.StatusNotFound, "allocation directory not found: %v", err)
	}
	return root, nil
}

// fsError maps a confined read's failure to a status.
func fsError(p string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return codedErrorf(http.StatusNotFound, "file %q not found in the allocation directory", p)
	}
	return codedErrorf(http.StatusBadRequest, "cannot read %q: %v (paths, symlinks included, must stay inside the allocation directory)", p, err)
}

func fileInfo(fi fs.FileInfo) AllocFileInfo {
	return AllocFileInfo{Name: fi.Name(), IsDir: fi.IsDir(), Size: fi.Size(), FileMode: fi.Mode().String(), ModTime: fi.ModTime()}
}

func writeJSON(w http.ResponseWriter, v any) error {
	w.Header().Set("Content-Type", "application/json")
	return json.NewEncoder(w).Encode(v)
}

// fsList handles GET /v1/client/fs/ls/{alloc}?path=.
func (s *HTTPServer) fsList(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	name, err := allocPath(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	root, err := openAllocRoot(ar)
	if err != nil {
		return err
	}
	defer root.Close()
	f, err := root.Open(name)
	if err != nil {
		return fsError(name, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(-1)
	if err != nil {
		return fsError(name, err)
	}
	out := []AllocFileInfo{}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil {
			out = append(out, fileInfo(fi))
		}
	}
	return writeJSON(w, out)
}

// fsStat handles GET /v1/client/fs/stat/{alloc}?path=.
func (s *HTTPServer) fsStat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	name, err := allocPath(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	root, err := openAllocRoot(ar)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		return fsError(name, err)
	}
	info := fileInfo(fi)
	if fi.Mode().IsRegular() {
		if f, err := root.Open(name); err == nil {
			buf := make([]byte, 512)
			n, _ := f.Read(buf)
			f.Close()
			info.ContentType = http.DetectContentType(buf[:n])
		}
	}
	return writeJSON(w, info)
}

// fsCat handles GET /v1/client/fs/cat/{alloc}?path=: the file's content.
func (s *HTTPServer) fsCat(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	return s.serveFile(w, r, ar, 0, -1)
}

// fsReadAt handles GET /v1/client/fs/readat/{alloc}?path=&offset=&limit=.
func (s *HTTPServer) fsReadAt(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	offset, err := int64Param(r, "offset", 0)
	if err != nil {
		return err
	}
	limit, err := int64Param(r, "limit", -1)
	if err != nil {
		return err
	}
	return s.serveFile(w, r, ar, offset, limit)
}

func (s *HTTPServer) serveFile(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner, offset, limit int64) error {
	name, err := allocPath(r.URL.Query().Get("path"))
	if err != nil {
		return err
	}
	root, err := openAllocRoot(ar)
	if err != nil {
		return err
	}
	defer root.Close()
	fi, err := root.Stat(name)
	if err != nil {
		return fsError(name, err)
	}
	if fi.IsDir() {
		return codedErrorf(http.StatusBadRequest, "%q is a directory: list it with fs/ls", name)
	}
	if !fi.Mode().IsRegular() {
		// A task's log FIFO among them: reading it would steal its output.
		return codedErrorf(http.StatusBadRequest, "%q is not a regular file", name)
	}
	f, err := root.Open(name)
	if err != nil {
		return fsError(name, err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return fsError(name, err)
	}
	var src io.Reader = f
	if limit >= 0 {
		src = io.LimitReader(f, limit)
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = io.Copy(w, src)
	return nil
}

// int64Param reads a non-negative integer parameter, def when absent.
func int64Param(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, codedErrorf(http.StatusBadRequest, "Invalid %s %q: must be a non-negative integer", name, v)
	}
	return n, nil
}
