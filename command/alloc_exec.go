package command

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/gorilla/websocket"
)

// AllocExecCommand is `nomad alloc exec`.
type AllocExecCommand struct {
	Meta
	stdin          io.Reader // nil means os.Stdin
	stdout, stderr io.Writer // nil means os.Stdout, os.Stderr
}

// Synopsis implements cli.Command.
func (c *AllocExecCommand) Synopsis() string { return "Execute commands in a task" }

// Help implements cli.Command.
func (c *AllocExecCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc exec [options] <allocation> <command> [args...]

  Run a command beside a running task, in its environment and working
  directory, on the node that runs it, and exit with the command's exit
  code. The node need not be reachable from the servers: the session goes
  through the connection the node opened to them. Only tasks of drivers
  without filesystem isolation (raw_exec) offer it.

` + generalOptions() + `

Exec Options:

  -task <name>
    The task to run the command in; may be left out when the allocation
    has one task.

  -i
    Pass stdin to the command. Defaults to true.

  -t
    Give the command a terminal (a pty). Defaults to true when stdin is a
    terminal.

  -job
    Take <allocation> to be a job ID or prefix, and act on the job's newest
    running allocation.
`)
}

// Run implements cli.Command.
func (c *AllocExecCommand) Run(args []string) int {
	var task string
	var interactive, ttyFlag, byJob bool
	flags := c.FlagSet("alloc exec")
	flags.StringVar(&task, "task", "", "")
	flags.BoolVar(&byJob, "job", false, "")
	flags.BoolVar(&interactive, "i", true, "")
	flags.BoolVar(&ttyFlag, "t", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() < 2 {
		return c.argsError("This command takes at least two arguments: <allocation> <command> [args...]", "alloc exec")
	}
	stdin, stdout, stderr := c.streams()
	tty := isTerminal(stdin)
	flags.Visit(func(f *flag.Flag) {
		if f.Name == "t" {
			tty = ttyFlag
		}
	})
	resolve := c.targetAlloc
	if byJob {
		resolve = c.targetJobAlloc
	}
	target, ok := resolve(flags.Arg(0))
	if !ok {
		return exitError
	}
	name, err := target.pickTask(task)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	if !interactive {
		stdin = strings.NewReader("")
	}
	cmd, _ := json.Marshal(flags.Args()[1:])
	q := url.Values{"task": {name}, "tty": {strconv.FormatBool(tty)}, "command": {string(cmd)}}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	conn, err := target.client.Websocket(ctx, target.path("/v1/client/allocation/%s/exec", q))
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to exec into task: %v", err))
		return exitError
	}
	defer conn.Close()
	if tty {
		if f, ok := stdin.(*os.File); ok && isTerminal(f) {
			if restore, err := makeRaw(int(f.Fd())); err == nil {
				defer restore()
			}
		}
	}
	code, err := runExec(conn, stdin, stdout, stderr, tty)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to exec into task: %v", err))
		return exitError
	}
	return code
}

func (c *AllocExecCommand) streams() (io.Reader, io.Writer, io.Writer) {
	var in io.Reader = os.Stdin
	var out, errw io.Writer = os.Stdout, os.Stderr
	if c.stdin != nil {
		in = c.stdin
	}
	if c.stdout != nil {
		out = c.stdout
	}
	if c.stderr != nil {
		errw = c.stderr
	}
	return in, out, errw
}

// execFrame is both directions' frame, as upstream's exec protocol.
type execFrame struct {
	Stdin   *execData `json:"stdin,omitempty"`
	TTYSize *struct {
		Height int `json:"height,omitempty"`
		Width  int `json:"width,omitempty"`
	} `json:"tty_size,omitempty"`
	Stdout *execData `json:"stdout,omitempty"`
	Stderr *execData `json:"stderr,omitempty"`
	Exited bool      `json:"exited,omitempty"`
	Result *struct {
		ExitCode int `json:"exit_code"`
	} `json:"result,omitempty"`
}

type execData struct {
	Data  []byte `json:"data,omitempty"`
	Close bool   `json:"close,omitempty"`
}

// runExec pumps stdin to the websocket and its frames to stdout and
// stderr until the command's exit code arrives.
func runExec(conn *websocket.Conn, stdin io.Reader, stdout, stderr io.Writer, tty bool) (int, error) {
	var wmu sync.Mutex
	send := func(f execFrame) error {
		wmu.Lock()
		defer wmu.Unlock()
		return conn.WriteJSON(f)
	}
	if tty {
		if h, w, err := termSize(); err == nil {
			f := execFrame{}
			f.TTYSize = &struct {
				Height int `json:"height,omitempty"`
				Width  int `json:"width,omitempty"`
			}{h, w}
			_ = send(f)
		}
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := stdin.Read(buf)
			if n > 0 && send(execFrame{Stdin: &execData{Data: append([]byte(nil), buf[:n]...)}}) != nil {
				return
			}
			if err != nil {
				_ = send(execFrame{Stdin: &execData{Close: true}})
				return
			}
		}
	}()
	for {
		var f execFrame
		if err := conn.ReadJSON(&f); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Text != "" {
				return -1, errors.New(ce.Text)
			}
			return -1, fmt.Errorf("connection closed before the command's exit code came: %w", err)
		}
		switch {
		case f.Stdout != nil && len(f.Stdout.Data) > 0:
			_, _ = stdout.Write(f.Stdout.Data)
		case f.Stderr != nil && len(f.Stderr.Data) > 0:
			_, _ = stderr.Write(f.Stderr.Data)
		case f.Exited && f.Result != nil:
			return f.Result.ExitCode, nil
		}
	}
}
