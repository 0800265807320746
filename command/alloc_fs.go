package command

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/ryanuber/columnize"
)

// AllocFSCommand is `nomad alloc fs`.
type AllocFSCommand struct {
	Meta
	stdout io.Writer // nil means os.Stdout
}

// Synopsis implements cli.Command.
func (c *AllocFSCommand) Synopsis() string { return "Inspect the contents of an allocation directory" }

// Help implements cli.Command.
func (c *AllocFSCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad alloc fs [options] <allocation> [path]

  List a directory of the allocation's directory on its node, or print a
  file. [path] is relative to the allocation directory ("/" or nothing is
  its root, "alloc/logs" its logs); no path may lead out of it.

` + generalOptions() + `

FS Options:

  -stat
    Show the file's details instead of its content.

  -job
    Take <allocation> to be a job ID or prefix, and act on the job's newest
    running allocation.
`)
}

type fileInfo struct {
	Name     string
	IsDir    bool
	Size     int64
	FileMode string
	ModTime  time.Time
}

// Run implements cli.Command.
func (c *AllocFSCommand) Run(args []string) int {
	var stat, byJob bool
	flags := c.FlagSet("alloc fs")
	flags.BoolVar(&stat, "stat", false, "")
	flags.BoolVar(&byJob, "job", false, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n < 1 || n > 2 {
		return c.argsError("This command takes one or two arguments: <allocation> [path]", "alloc fs")
	}
	p := "/"
	if flags.NArg() == 2 {
		p = flags.Arg(1)
	}
	resolve := c.targetAlloc
	if byJob {
		resolve = c.targetJobAlloc
	}
	target, ok := resolve(flags.Arg(0))
	if !ok {
		return exitError
	}
	out := c.stdout
	if out == nil {
		out = os.Stdout
	}
	ctx := context.Background()
	var fi fileInfo
	resp, err := target.do(ctx, http.MethodGet, target.path("/v1/client/fs/stat/%s", url.Values{"path": {p}}), nil)
	if err == nil {
		err = decodeJSON(resp.Body, &fi)
		resp.Body.Close()
	}
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading %q: %v", p, err))
		return exitError
	}
	switch {
	case stat:
		fmt.Fprintln(out, formatFiles([]fileInfo{fi}))
	case fi.IsDir:
		var files []fileInfo
		resp, err := target.do(ctx, http.MethodGet, target.path("/v1/client/fs/ls/%s", url.Values{"path": {p}}), nil)
		if err == nil {
			err = decodeJSON(resp.Body, &files)
			resp.Body.Close()
		}
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error listing %q: %v", p, err))
			return exitError
		}
		fmt.Fprintln(out, formatFiles(files))
	default:
		resp, err := target.do(ctx, http.MethodGet, target.path("/v1/client/fs/cat/%s", url.Values{"path": {p}}), nil)
		if err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading %q: %v", p, err))
			return exitError
		}
		defer resp.Body.Close()
		if _, err := io.Copy(out, resp.Body); err != nil {
			c.Ui.Error(fmt.Sprintf("Error reading %q: %v", p, err))
			return exitError
		}
	}
	return exitOK
}

// formatFiles is upstream's listing: mode, size, time, name (a directory
// ending in /).
func formatFiles(files []fileInfo) string {
	rows := []string{"Mode|Size|Modified Time|Name"}
	for _, f := range files {
		name := f.Name
		if f.IsDir {
			name += "/"
		}
		rows = append(rows, fmt.Sprintf("%s|%d|%s|%s", f.FileMode, f.Size, f.ModTime.Local().Format("2006-01-02T15:04:05Z07:00"), name))
	}
	return columnize.SimpleFormat(rows)
}
