package agent

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nomad-edge/nomad/client/allocrunner"
)

// StreamFrame is one frame of a framed log stream, as upstream's: Data is
// base64 in JSON; a frame with nothing set is a heartbeat.
type StreamFrame struct {
	Offset    int64  `json:",omitempty"`
	Data      []byte `json:",omitempty"`
	File      string `json:",omitempty"`
	FileEvent string `json:",omitempty"`
}

// Log streaming cadence: how often a followed log is checked for more, and
// how often a quiet stream sends a heartbeat so that proxies and NAT
// mappings on the way keep it open.
const (
	logPollInterval = 200 * time.Millisecond
	logHeartbeat    = 10 * time.Second
	logChunk        = 64 << 10
)

// logFile is one file of a task's log: <task>.<type>.<index>.
type logFile struct {
	index int
	name  string
	size  int64
}

// logFiles lists the files of a task's stdout or stderr, oldest first.
func logFiles(dir, task, typ string) []logFile {
	prefix := task + "." + typ + "."
	entries, _ := os.ReadDir(dir)
	var out []logFile
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok {
			continue
		}
		idx, err := strconv.Atoi(rest)
		if err != nil || idx < 0 {
			continue
		}
		var size int64
		if fi, err := e.Info(); err == nil {
			size = fi.Size()
		}
		out = append(out, logFile{index: idx, name: e.Name(), size: size})
	}
	slices.SortFunc(out, func(a, b logFile) int { return a.index - b.index })
	return out
}

// logStart finds where origin and offset point: the file's position in
// files and the offset in it.
func logStart(files []logFile, origin string, offset int64) (int, int64) {
	if len(files) == 0 {
		return 0, 0
	}
	if origin == "end" {
		for i := len(files) - 1; i >= 0; i-- {
			if offset <= files[i].size {
				return i, files[i].size - offset
			}
			offset -= files[i].size
		}
		return 0, 0
	}
	for i, f := range files {
		if offset <= f.size || i == len(files)-1 {
			return i, min(offset, f.size)
		}
		offset -= f.size
	}
	return 0, 0
}

// logsRequest is what a logs request asks for.
type logsRequest struct {
	task, typ, origin string
	offset            int64
	follow, plain     bool
}

func parseLogsRequest(r *http.Request) (logsRequest, error) {
	q := r.URL.Query()
	lr := logsRequest{task: q.Get("task"), typ: q.Get("type"), origin: q.Get("origin")}
	if lr.task == "" {
		return lr, codedErrorf(http.StatusBadRequest, "missing task name: set ?task=")
	}
	if lr.typ != "stdout" && lr.typ != "stderr" {
		return lr, codedErrorf(http.StatusBadRequest, "Invalid type %q: must be stdout or stderr", lr.typ)
	}
	switch lr.origin {
	case "":
		lr.origin = "start"
	case "start", "end":
	default:
		return lr, codedErrorf(http.StatusBadRequest, "Invalid origin %q: must be start or end", lr.origin)
	}
	var err error
	if lr.offset, err = int64Param(r, "offset", 0); err != nil {
		return lr, err
	}
	if lr.follow, err = boolParam(r, "follow"); err != nil {
		return lr, err
	}
	if lr.plain, err = boolParam(r, "plain"); err != nil {
		return lr, err
	}
	return lr, nil
}

// fsLogs handles GET /v1/client/fs/logs/{alloc}: a task's stdout or
// stderr across its rotated files, framed (StreamFrame JSON) or plain,
// followed while the allocation runs when follow=true.
func (s *HTTPServer) fsLogs(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	lr, err := parseLogsRequest(r)
	if err != nil {
		return err
	}
	if _, err := ar.Task(lr.task); err != nil {
		return codedErrorf(http.StatusBadRequest, "unknown task name %q", lr.task)
	}
	if lr.plain {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	ls := &logStreamer{w: w, lr: lr, dir: ar.Dir().LogDir, done: ar.WaitCh(), ctxDone: r.Context().Done()}
	ls.run()
	return nil
}

// logStreamer writes one logs response.
type logStreamer struct {
	w       http.ResponseWriter
	lr      logsRequest
	dir     string
	done    <-chan struct{} // the allocation has finished
	ctxDone <-chan struct{} // the caller went away
	enc     *json.Encoder
}

func (ls *logStreamer) run() {
	ls.enc = json.NewEncoder(ls.w)
	files := logFiles(ls.dir, ls.lr.task, ls.lr.typ)
	pos, off := logStart(files, ls.lr.origin, ls.lr.offset)
	idx := 0
	if len(files) > 0 {
		idx = files[pos].index
	}
	ticker := time.NewTicker(logPollInterval)
	defer ticker.Stop()
	lastWrite := time.Now()
	for {
		n, err := ls.copyFrom(idx, &off)
		if err != nil {
			return
		}
		if n > 0 {
			lastWrite = time.Now()
			continue
		}
		if next, ok := ls.nextIndex(idx); ok {
			idx, off = next, 0
			continue
		}
		if !ls.lr.follow || ls.finished() {
			return
		}
		select {
		case <-ls.ctxDone:
			return
		case <-ticker.C:
		}
		if !ls.lr.plain && time.Since(lastWrite) >= logHeartbeat {
			if ls.enc.Encode(StreamFrame{}) != nil {
				return
			}
			ls.flush()
			lastWrite = time.Now()
		}
	}
}

func (ls *logStreamer) finished() bool {
	select {
	case <-ls.done:
		// Whatever the task wrote last has been read: the loop copies
		// before it asks.
		return true
	default:
		return false
	}
}

// nextIndex is the index of the file after idx, once one exists.
func (ls *logStreamer) nextIndex(idx int) (int, bool) {
	for _, f := range logFiles(ls.dir, ls.lr.task, ls.lr.typ) {
		if f.index > idx {
			return f.index, true
		}
	}
	return 0, false
}

// copyFrom writes what file idx holds past *off, advancing it; it reports
// the bytes written and an error when the caller can no longer be written
// to.
func (ls *logStreamer) copyFrom(idx int, off *int64) (int64, error) {
	name := ls.lr.task + "." + ls.lr.typ + "." + strconv.Itoa(idx)
	f, err := os.Open(filepath.Join(ls.dir, name))
	if err != nil {
		return 0, nil
	}
	defer f.Close()
	if _, err := f.Seek(*off, io.SeekStart); err != nil {
		return 0, nil
	}
	var total int64
	buf := make([]byte, logChunk)
	for {
		n, rerr := f.Read(buf)
		if n > 0 {
			*off += int64(n)
			total += int64(n)
			if err := ls.write(name, *off, buf[:n]); err != nil {
				return total, err
			}
		}
		if rerr != nil {
			return total, nil
		}
	}
}

func (ls *logStreamer) write(name string, off int64, data []byte) error {
	var err error
	if ls.lr.plain {
		_, err = ls.w.Write(data)
	} else {
		err = ls.enc.Encode(StreamFrame{Offset: off, Data: data, File: "alloc/logs/" + name})
	}
	if err == nil {
		ls.flush()
	}
	return err
}

func (ls *logStreamer) flush() {
	if f, ok := ls.w.(http.Flusher); ok {
		f.Flush()
	}
}
