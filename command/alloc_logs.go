package command

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// AllocLogsCommand is `nomad alloc logs`.
type AllocLogsCommand struct {
	Meta
	// stdout is where the log goes; nil means os.Stdout.
	stdout io.Writer
}

// Synopsis implements cli.Command.
func (c *AllocLogsCommand) Synopsis() string { return "Stream the logs of a task" }

// Help implements cli.Command.
func (c *AllocLogsCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc logs [options] <allocation> [task]

  Print a task's stdout (or stderr with -stderr), read from the node that
  runs it. The node need not be reachable from the servers: the log comes
  through the connection the node opened to them. [task] may be left out
  when the allocation has one task.

` + generalOptions() + `

Logs Options:

  -stderr
    Print the task's stderr instead of its stdout.

  -f
    Follow the log: keep printing what the task writes until interrupted
    or the allocation finishes.

  -tail
    Print the end of the log (the last 10 lines unless -n or -c say).

  -n <lines>
    With -tail, how many lines to print.

  -c <bytes>
    With -tail, how many bytes to print.

  -task <name>
    The task, as the [task] argument names it.

  -job
    Take <allocation> to be a job ID or prefix, and act on the job's newest
    running allocation.
`)
}

// Run implements cli.Command.
func (c *AllocLogsCommand) Run(args []string) int {
	var stderr, follow, tail, byJob bool
	var lines, bytesN int64
	var task string
	flags := c.FlagSet("alloc logs")
	flags.BoolVar(&stderr, "stderr", false, "")
	flags.BoolVar(&follow, "f", false, "")
	flags.BoolVar(&tail, "tail", false, "")
	flags.Int64Var(&lines, "n", -1, "")
	flags.Int64Var(&bytesN, "c", -1, "")
	flags.StringVar(&task, "task", "", "")
	flags.BoolVar(&byJob, "job", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n < 1 || n > 2 {
		return c.argsError("This command takes one or two arguments: <allocation> [task]", "alloc logs")
	}
	if flags.NArg() == 2 {
		task = flags.Arg(1)
	}
	if (lines >= 0 || bytesN >= 0) && !tail {
		tail = true
	}
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
	typ := "stdout"
	if stderr {
		typ = "stderr"
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	lr := logRead{target: target, task: name, typ: typ, follow: follow, out: c.out()}
	switch {
	case tail && bytesN >= 0:
		err = lr.stream(ctx, "end", bytesN, 0, 0)
	case tail:
		if lines < 0 {
			lines = 10
		}
		err = lr.tailLines(ctx, lines)
	default:
		err = lr.stream(ctx, "start", 0, 0, 0)
	}
	if err != nil && ctx.Err() == nil {
		c.Ui.Error(fmt.Sprintf("Error reading logs: %v", err))
		return exitError
	}
	return exitOK
}

func (c *AllocLogsCommand) out() io.Writer {
	if c.stdout != nil {
		return c.stdout
	}
	return os.Stdout
}

// logRead is one read of a task's log.
type logRead struct {
	target    *allocTarget
	task, typ string
	follow    bool
	out       io.Writer
}

func (lr logRead) open(ctx context.Context, origin string, offset int64) (*http.Response, error) {
	q := url.Values{
		"task": {lr.task}, "type": {lr.typ}, "origin": {origin},
		"offset": {strconv.FormatInt(offset, 10)}, "plain": {"true"},
		"follow": {strconv.FormatBool(lr.follow)},
	}
	return lr.target.do(ctx, http.MethodGet, lr.target.path("/v1/client/fs/logs/%s", q), nil)
}

// stream copies the log from origin and offset; the first history bytes
// are kept back and only their last keep lines printed (keep < 0: none
// kept back).
func (lr logRead) stream(ctx context.Context, origin string, offset, history, keep int64) error {
	resp, err := lr.open(ctx, origin, offset)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if history > 0 {
		buf := make([]byte, history)
		n, err := io.ReadFull(resp.Body, buf)
		if _, werr := lr.out.Write(lastLines(buf[:n], keep)); werr != nil {
			return werr
		}
		if err != nil {
			return nil
		}
	}
	_, err = io.Copy(lr.out, resp.Body)
	return err
}

// tailLines prints the last n lines, then follows when asked: it reads a
// window of the log's end large enough for n ordinary lines, so that a
// node on a slow link is not asked for its whole log.
func (lr logRead) tailLines(ctx context.Context, n int64) error {
	size, err := lr.logSize(ctx)
	if err != nil {
		return err
	}
	window := max(n*512, 64<<10)
	start := max(0, size-window)
	return lr.stream(ctx, "start", start, size-start, n)
}

// logSize is the size of the task's log across its rotated files.
func (lr logRead) logSize(ctx context.Context) (int64, error) {
	var files []struct {
		Name  string
		IsDir bool
		Size  int64
	}
	resp, err := lr.target.do(ctx, http.MethodGet, lr.target.path("/v1/client/fs/ls/%s", url.Values{"path": {"alloc/logs"}}), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if err := decodeJSON(resp.Body, &files); err != nil {
		return 0, err
	}
	var total int64
	prefix := lr.task + "." + lr.typ + "."
	for _, f := range files {
		if rest, ok := strings.CutPrefix(f.Name, prefix); ok && !f.IsDir {
			if _, err := strconv.Atoi(rest); err == nil {
				total += f.Size
			}
		}
	}
	return total, nil
}

// lastLines returns the last n lines of b.
func lastLines(b []byte, n int64) []byte {
	if n < 0 {
		return b
	}
	end := len(b)
	trimmed := bytes.TrimSuffix(b, []byte("\n"))
	count := int64(0)
	for i := len(trimmed) - 1; i >= 0; i-- {
		if trimmed[i] == '\n' {
			count++
			if count == n {
				return b[i+1 : end]
			}
		}
	}
	if n == 0 {
		return nil
	}
	return b
}
