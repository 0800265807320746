// Package logfile writes the agent's own log to a file (the agent's
// log_file), rotated by size and by age with upstream's names: the file
// being written keeps its name (nomad.log) and a full one is renamed
// nomad-<unix nanoseconds>.log, the oldest of those removed beyond
// MaxFiles. A task's output is rotated elsewhere (client/logrotate, from
// a FIFO, with numbered names); this is only for the agent's log.
package logfile

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nomad-edge/nomad/helper/clock"
)

// DefaultName is the file written in a log_file that names a directory.
const DefaultName = "nomad.log"

// DefaultRotateDuration is how long a file is written before it is
// rotated when no duration is set (upstream's log_rotate_duration).
const DefaultRotateDuration = 24 * time.Hour

// Config says where the log goes and when it rotates.
type Config struct {
	// Path is the file, or a directory (an existing one, or a path ending
	// in a separator) to write DefaultName in.
	Path string
	// RotateBytes rotates a file before a write would take it past this
	// size; 0 never rotates by size.
	RotateBytes int64
	// RotateDuration rotates a file once it has been written this long;
	// 0 means DefaultRotateDuration.
	RotateDuration time.Duration
	// MaxFiles is how many rotated files are kept, the newest; 0 keeps
	// them all.
	MaxFiles int
	// Clock times the rotations; nil is the real clock.
	Clock clock.Clock
}

// Writer is an io.Writer onto the log file. It is safe for concurrent
// use; each Write lands whole in one file.
type Writer struct {
	cfg        Config
	dir, stem  string // the active file is dir/stem.ext
	ext        string
	mu         sync.Mutex
	f          *os.File
	size       int64
	openedAt   time.Time
	lastRotate int64
}

// Open creates the directory if needed and opens the file for appending.
func Open(cfg Config) (*Writer, error) {
	if cfg.Path == "" {
		return nil, errors.New("log_file: empty path")
	}
	if cfg.RotateBytes < 0 || cfg.MaxFiles < 0 || cfg.RotateDuration < 0 {
		return nil, errors.New("log_file: rotation settings must not be negative")
	}
	if cfg.RotateDuration == 0 {
		cfg.RotateDuration = DefaultRotateDuration
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real()
	}
	path := cfg.Path
	if strings.HasSuffix(path, string(os.PathSeparator)) {
		path = filepath.Join(path, DefaultName)
	} else if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, DefaultName)
	}
	w := &Writer{cfg: cfg, dir: filepath.Dir(path), ext: filepath.Ext(path)}
	w.stem = strings.TrimSuffix(filepath.Base(path), w.ext)
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, fmt.Errorf("log_file: %w", err)
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

// Path is the file being written.
func (w *Writer) Path() string { return filepath.Join(w.dir, w.stem+w.ext) }

func (w *Writer) open() error {
	f, err := os.OpenFile(w.Path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o640)
	if err != nil {
		return fmt.Errorf("log_file: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return fmt.Errorf("log_file: %w", err)
	}
	w.f, w.size, w.openedAt = f, st.Size(), w.cfg.Clock.Now()
	return nil
}

// Write appends p, rotating first when p would take the file past
// RotateBytes (a file holds at least one write, however large) or the
// file has been written for RotateDuration.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return 0, fs.ErrClosed
	}
	now := w.cfg.Clock.Now()
	full := w.cfg.RotateBytes > 0 && w.size > 0 && w.size+int64(len(p)) > w.cfg.RotateBytes
	if full || now.Sub(w.openedAt) >= w.cfg.RotateDuration {
		if err := w.rotate(now); err != nil {
			return 0, err
		}
	}
	n, err := w.f.Write(p)
	w.size += int64(n)
	return n, err
}

// rotate renames the active file to stem-<unix ns>.ext, opens a new one
// and removes the oldest rotated files beyond MaxFiles.
func (w *Writer) rotate(now time.Time) error {
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("log_file: %w", err)
	}
	w.f = nil
	// Two rotations within one clock tick still get distinct names.
	stamp := max(now.UnixNano(), w.lastRotate+1)
	w.lastRotate = stamp
	rotated := filepath.Join(w.dir, fmt.Sprintf("%s-%d%s", w.stem, stamp, w.ext))
	if err := os.Rename(w.Path(), rotated); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("log_file: %w", err)
	}
	if err := w.open(); err != nil {
		return err
	}
	return w.prune()
}

// Rotated lists the rotated files, oldest first.
func (w *Writer) Rotated() ([]string, error) {
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, err
	}
	type file struct {
		name  string
		stamp int64
	}
	var files []file
	for _, e := range entries {
		mid, ok := strings.CutPrefix(e.Name(), w.stem+"-")
		if !ok || !strings.HasSuffix(mid, w.ext) {
			continue
		}
		stamp, err := strconv.ParseInt(strings.TrimSuffix(mid, w.ext), 10, 64)
		if err != nil {
			continue
		}
		files = append(files, file{e.Name(), stamp})
	}
	slices.SortFunc(files, func(a, b file) int { return cmp.Compare(a.stamp, b.stamp) })
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = filepath.Join(w.dir, f.name)
	}
	return out, nil
}

func (w *Writer) prune() error {
	if w.cfg.MaxFiles == 0 {
		return nil
	}
	files, err := w.Rotated()
	if err != nil {
		return fmt.Errorf("log_file: %w", err)
	}
	for len(files) > w.cfg.MaxFiles {
		if err := os.Remove(files[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("log_file: %w", err)
		}
		files = files[1:]
	}
	return nil
}

// Close closes the file; later writes fail.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return nil
	}
	err := w.f.Close()
	w.f = nil
	return err
}
