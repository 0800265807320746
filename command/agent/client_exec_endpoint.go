package agent

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"github.com/gorilla/websocket"

	"github.com/nomad-edge/nomad/client/allocrunner"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/helper/wsclose"
)

// Exec frames, as upstream's (ExecStreamingInput, ExecStreamingOutput):
// JSON text messages, data base64.
type (
	execIO struct {
		Data  []byte `json:"data,omitempty"`
		Close bool   `json:"close,omitempty"`
	}
	execTTYSize struct {
		Height int `json:"height,omitempty"`
		Width  int `json:"width,omitempty"`
	}
	execInput struct {
		Stdin   *execIO      `json:"stdin,omitempty"`
		TTYSize *execTTYSize `json:"tty_size,omitempty"`
	}
	execResult struct {
		ExitCode int `json:"exit_code"`
	}
	execOutput struct {
		Stdout *execIO     `json:"stdout,omitempty"`
		Stderr *execIO     `json:"stderr,omitempty"`
		Exited bool        `json:"exited,omitempty"`
		Result *execResult `json:"result,omitempty"`
	}
)

// execUpgrader accepts websockets from non-browser callers (no Origin) and
// from pages of the agent itself: a page elsewhere must not run commands
// through a browser that can reach the agent.
var execUpgrader = websocket.Upgrader{
	CheckOrigin: func(r *http.Request) bool {
		origin := r.Header.Get("Origin")
		if origin == "" {
			return true
		}
		u, err := url.Parse(origin)
		return err == nil && u.Host == r.Host
	},
}

// execRequest is what an exec request asks for.
type execRequest struct {
	task    string
	tty     bool
	command []string
}

func parseExecRequest(r *http.Request) (execRequest, error) {
	q := r.URL.Query()
	er := execRequest{task: q.Get("task")}
	if er.task == "" {
		return er, codedErrorf(http.StatusBadRequest, "missing task name: set ?task=")
	}
	tty, err := boolParam(r, "tty")
	if err != nil {
		return er, err
	}
	er.tty = tty
	if err := json.Unmarshal([]byte(q.Get("command")), &er.command); err != nil || len(er.command) == 0 || er.command[0] == "" {
		return er, codedErrorf(http.StatusBadRequest, "Invalid command %q: must be a non-empty JSON array of strings", q.Get("command"))
	}
	return er, nil
}

// allocExec handles GET /v1/client/allocation/{alloc}/exec: a websocket
// over which a command runs beside the task, in its environment and
// working directory, with a pty when tty=true. Only drivers without
// filesystem isolation (raw_exec) offer it.
func (s *HTTPServer) allocExec(w http.ResponseWriter, r *http.Request, ar *allocrunner.AllocRunner) error {
	er, err := parseExecRequest(r)
	if err != nil {
		return err
	}
	tr, err := ar.Task(er.task)
	if err != nil {
		return taskOpError(err)
	}
	info, err := tr.ExecInfo()
	if err != nil {
		return taskOpError(err)
	}
	if info.Isolation != drivers.FSIsolationNone {
		return codedErrorf(http.StatusBadRequest, "exec is not supported by the %q driver of task %q", info.Driver, er.task)
	}
	conn, err := execUpgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil // the upgrader answered
	}
	defer conn.Close() // the session closes it as the protocol asks; this is for a panic
	sess := &execSession{conn: conn, logger: s}
	sess.run(r.Context(), er, info)
	return nil
}

// execSession is one exec over one websocket.
type execSession struct {
	conn   *websocket.Conn
	logger *HTTPServer
	wmu    sync.Mutex
}

func (e *execSession) send(out execOutput) error {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	return e.conn.WriteJSON(out)
}

// fail ends an exec whose command did not start: no input reader runs yet.
func (e *execSession) fail(msg string) {
	wsclose.Close(e.conn, websocket.CloseInternalServerErr, msg)
}

func (e *execSession) run(ctx context.Context, er execRequest, info allocrunner.ExecInfo) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := info.Command(ctx, er.command[0], er.command[1:]...)

	var stdin io.WriteCloser
	var outputs sync.WaitGroup
	var ptmx *os.File
	if er.tty {
		var f *os.File
		err := info.Start(func() (err error) {
			f, err = pty.Start(cmd)
			return err
		})
		if err != nil {
			e.fail("failed to exec into task: " + err.Error())
			return
		}
		ptmx, stdin = f, f
		outputs.Add(1)
		go e.pump(&outputs, f, false)
	} else {
		in, err := cmd.StdinPipe()
		if err != nil {
			e.fail(err.Error())
			return
		}
		stdout, _ := cmd.StdoutPipe()
		stderr, _ := cmd.StderrPipe()
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := info.Start(cmd.Start); err != nil {
			e.fail("failed to exec into task: " + err.Error())
			return
		}
		stdin = in
		outputs.Add(2)
		go e.pump(&outputs, stdout, false)
		go e.pump(&outputs, stderr, true)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		e.readInput(cancel, stdin, ptmx)
	}()

	outputs.Wait()
	err := cmd.Wait()
	if ptmx != nil {
		ptmx.Close()
	}
	code := 0
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
	} else if err != nil {
		code = -1
	}
	_ = e.send(execOutput{Exited: true, Result: &execResult{ExitCode: code}})
	wsclose.CloseRead(e.conn, websocket.CloseNormalClosure, "", read)
}

// pump sends what r yields as stdout (or stderr) frames until it ends.
func (e *execSession) pump(wg *sync.WaitGroup, r io.Reader, isErr bool) {
	defer wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			op := &execIO{Data: slices.Clone(buf[:n])}
			out := execOutput{Stdout: op}
			if isErr {
				out = execOutput{Stderr: op}
			}
			if e.send(out) != nil {
				return
			}
		}
		if err != nil {
			// A pty reports EIO once the command has exited.
			op := &execIO{Close: true}
			if isErr {
				_ = e.send(execOutput{Stderr: op})
			} else {
				_ = e.send(execOutput{Stdout: op})
			}
			return
		}
	}
}

// readInput feeds the caller's frames to the command until the websocket
// closes, which ends the command; after the command's end it reads on
// until the caller answers the close frame (wsclose.CloseRead).
func (e *execSession) readInput(cancel func(), stdin io.WriteCloser, ptmx *os.File) {
	for {
		var in execInput
		if err := e.conn.ReadJSON(&in); err != nil {
			cancel()
			return
		}
		switch {
		case in.Stdin != nil && len(in.Stdin.Data) > 0:
			_, _ = stdin.Write(in.Stdin.Data)
		case in.Stdin != nil && in.Stdin.Close:
			if ptmx != nil {
				// A terminal has no end of input: ^D says it.
				_, _ = ptmx.Write([]byte{4})
			} else {
				_ = stdin.Close()
			}
		case in.TTYSize != nil && ptmx != nil:
			_ = pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(in.TTYSize.Height), Cols: uint16(in.TTYSize.Width)})
		}
	}
}
