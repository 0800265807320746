// Package logrotate keeps a task's output in size-bounded files, from the
// client process itself: the task writes into a FIFO, and a Rotator copies
// what comes out into <base>.0, <base>.1, ... (upstream's names), starting a
// new file when one is full and removing the oldest beyond MaxFiles.
//
// There is no helper process per task. The task holds its FIFO open for
// reading as well as writing (drivers open a FIFO O_RDWR), so that while
// no client runs its writes never fail with SIGPIPE: they fill the pipe's
// buffer and then wait, and the next client's Rotator picks up where the
// last file ends.
package logrotate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config says where a stream goes.
type Config struct {
	// FIFO is the path the task writes to; it is created when missing.
	FIFO string
	// Dir and Base name the files: Dir/Base.N.
	Dir, Base string
	// MaxFiles is how many files are kept; MaxFileSize how large each
	// grows, in bytes.
	MaxFiles    int
	MaxFileSize int64
}

// drainWait is how long Stop goes on reading what the task wrote last.
const drainWait = 100 * time.Millisecond

// Rotator copies one FIFO into rotated files until Stop.
type Rotator struct {
	cfg  Config
	fifo *os.File
	w    *fileWriter
	done chan struct{}
	once sync.Once
}

// Start creates the FIFO (if needed) and starts copying from it.
func Start(cfg Config) (*Rotator, error) {
	if cfg.MaxFiles < 1 || cfg.MaxFileSize < 1 {
		return nil, fmt.Errorf("log rotation of %s: max files and max file size must be positive", cfg.Base)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := syscall.Mkfifo(cfg.FIFO, 0o600); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("creating log FIFO %s: %w", cfg.FIFO, err)
	}
	// O_RDWR: the open does not wait for a writer, and a task that exits
	// and restarts does not end our reads.
	f, err := os.OpenFile(cfg.FIFO, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening log FIFO %s: %w", cfg.FIFO, err)
	}
	w, err := openWriter(cfg)
	if err != nil {
		f.Close()
		return nil, err
	}
	r := &Rotator{cfg: cfg, fifo: f, w: w, done: make(chan struct{})}
	go r.copy()
	return r, nil
}

func (r *Rotator) copy() {
	defer close(r.done)
	defer r.w.close()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.fifo.Read(buf)
		if n > 0 {
			r.w.write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Stop reads what is still buffered in the FIFO for a moment, then stops
// and closes the files. The FIFO stays, for a later Rotator.
func (r *Rotator) Stop() {
	r.once.Do(func() {
		_ = r.fifo.SetReadDeadline(time.Now().Add(drainWait))
		<-r.done
		r.fifo.Close()
	})
}

// fileWriter writes into the current file and rotates.
type fileWriter struct {
	cfg  Config
	idx  int
	size int64
	f    *os.File
}

// openWriter continues the newest existing file, so that a client
// restart does not start a new file each time.
func openWriter(cfg Config) (*fileWriter, error) {
	w := &fileWriter{cfg: cfg}
	if idxs := Indexes(cfg.Dir, cfg.Base); len(idxs) > 0 {
		w.idx = idxs[len(idxs)-1]
	}
	if err := w.open(); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *fileWriter) path(idx int) string {
	return filepath.Join(w.cfg.Dir, w.cfg.Base+"."+strconv.Itoa(idx))
}

func (w *fileWriter) open() error {
	f, err := os.OpenFile(w.path(w.idx), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	w.f, w.size = f, fi.Size()
	return nil
}

// write writes p across as many files as it fills. A failed write drops
// the data: a full disk must not stop the task.
func (w *fileWriter) write(p []byte) {
	for len(p) > 0 {
		if w.size >= w.cfg.MaxFileSize {
			if err := w.rotate(); err != nil {
				return
			}
		}
		n := min(int64(len(p)), w.cfg.MaxFileSize-w.size)
		m, err := w.f.Write(p[:n])
		w.size += int64(m)
		if err != nil {
			return
		}
		p = p[n:]
	}
}

func (w *fileWriter) rotate() error {
	w.f.Close()
	w.idx++
	if err := w.open(); err != nil {
		return err
	}
	for _, idx := range Indexes(w.cfg.Dir, w.cfg.Base) {
		if idx <= w.idx-w.cfg.MaxFiles {
			_ = os.Remove(w.path(idx))
		}
	}
	return nil
}

func (w *fileWriter) close() {
	if w.f != nil {
		w.f.Close()
	}
}

// Indexes returns the indexes of the files Dir/Base.N that exist, in
// ascending order.
func Indexes(dir, base string) []int {
	entries, _ := os.ReadDir(dir)
	var out []int
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), base+".")
		if !ok {
			continue
		}
		if idx, err := strconv.Atoi(rest); err == nil && idx >= 0 && strconv.Itoa(idx) == rest {
			out = append(out, idx)
		}
	}
	slices.Sort(out)
	return out
}
