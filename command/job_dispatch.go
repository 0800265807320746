package command

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// maxDispatchPayload is upstream's bound on a payload; the server enforces
// it too, but reading a huge file only to have it refused helps no one.
const maxDispatchPayload = 16 * 1024

// JobDispatchCommand is `nomad job dispatch`.
type JobDispatchCommand struct {
	Meta
	// stdin is where "-" reads the payload from; nil means os.Stdin.
	stdin io.Reader
}

// Synopsis implements cli.Command.
func (c *JobDispatchCommand) Synopsis() string { return "Dispatch an instance of a parameterized job" }

// Help implements cli.Command.
func (c *JobDispatchCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad job dispatch [options] <job> [input source]

  Launch a child of a parameterized job, with metadata and an optional
  payload, and follow its evaluation. The input source is a file to read
  the payload from, or "-" for standard input; the payload is at most
  16 KiB and the client writes it into the task's local/ directory at the
  file named by the task's dispatch_payload block.

` + generalOptions() + `

Dispatch Options:

  -meta <key>=<value>
    Metadata for the child job, overriding the job's own. Repeatable.
    Keys must be listed in the parameterized block's meta_required or
    meta_optional.

  -detach
    Print the dispatched job's ID and evaluation ID and exit without
    following the evaluation.

  -priority <1-100>
    The child job's priority, instead of the parameterized job's.

  -verbose
    Show full IDs.
`)
}

// Run implements cli.Command.
func (c *JobDispatchCommand) Run(args []string) int {
	var detach, verbose bool
	var priority int
	var metas stringSlice
	flags := c.FlagSet("job dispatch")
	flags.BoolVar(&detach, "detach", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.Var(&metas, "meta", "")
	flags.IntVar(&priority, "priority", 0, "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if n := flags.NArg(); n < 1 || n > 2 {
		return c.argsError("This command takes one or two arguments: <job> [input source]", "job dispatch")
	}
	meta, err := parseMetaFlags(metas)
	if err != nil {
		c.Ui.Error(err.Error())
		return exitError
	}
	var payload []byte
	if flags.NArg() == 2 {
		if payload, err = c.readPayload(flags.Arg(1)); err != nil {
			c.Ui.Error(err.Error())
			return exitError
		}
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	client, stub, ok := c.resolveJob(client, flags.Arg(0))
	if !ok {
		return exitError
	}
	jobID := stub.ID
	resp, _, err := client.Jobs().DispatchOpts(jobID, &api.DispatchOptions{Meta: meta, Payload: payload, Priority: priority}, nil)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Failed to dispatch job: %v", err))
		return exitError
	}
	c.Ui.Output(formatKV([]string{
		"Dispatched Job ID|" + resp.DispatchedJobID,
		"Evaluation ID|" + view{verbose: verbose}.id(resp.EvalID),
	}))
	if detach || resp.EvalID == "" {
		return exitOK
	}
	c.Ui.Output("")
	return newEvalMonitor(c.Ui, client, view{verbose: verbose}).monitor(resp.EvalID)
}

// readPayload reads the payload from a file, or standard input for "-".
func (c *JobDispatchCommand) readPayload(source string) ([]byte, error) {
	var r io.Reader
	if source == "-" {
		r = c.stdin
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := os.Open(source)
		if err != nil {
			return nil, userErrorf("Error opening input source %q: %v", source, err)
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxDispatchPayload+1))
	if err != nil {
		return nil, userErrorf("Error reading input data: %v", err)
	}
	if len(data) > maxDispatchPayload {
		return nil, userErrorf("Payload exceeds maximum size; it must be at most %d bytes", maxDispatchPayload)
	}
	return data, nil
}

// parseMetaFlags turns -meta key=value flags into a map.
func parseMetaFlags(flags []string) (map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	meta := make(map[string]string, len(flags))
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, userErrorf("Error parsing meta %q: must be of the form <key>=<value>", kv)
		}
		meta[k] = v
	}
	return meta, nil
}
