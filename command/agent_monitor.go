package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// MonitorCommand is `nomad monitor`: the agent's log, streamed.
type MonitorCommand struct {
	Meta

	// ctx, when set, ends the stream (tests); otherwise Ctrl-C does.
	ctx context.Context
}

// Synopsis implements cli.Command.
func (c *MonitorCommand) Synopsis() string { return "Stream logs from a Nomad agent" }

// Help implements cli.Command.
func (c *MonitorCommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad monitor [options]

  Stream the log of the agent at -address, at a level that may be more
  verbose than the agent's own log_level, until interrupted. Lines the
  terminal is too slow for are dropped and counted, never waited for.

` + generalOptions() + `

Monitor Options:

  -log-level=<level>
    The lowest level to show: trace, debug, info (default), warn or
    error.

  -log-json
    Stream the lines as JSON objects.

  -node-id=<id>, -server-id=<name>
    The agent to monitor. Only the agent at -address can be monitored
    today; naming another is an error.
`)
}

// Run implements cli.Command.
func (c *MonitorCommand) Run(args []string) int {
	var level, nodeID, serverID string
	var logJSON bool
	flags := c.FlagSet("monitor")
	flags.StringVar(&level, "log-level", "", "")
	flags.BoolVar(&logJSON, "log-json", false, "")
	flags.StringVar(&nodeID, "node-id", "", "")
	flags.StringVar(&serverID, "server-id", "", "")
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 0 {
		return c.argsError("This command takes no arguments", "monitor")
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	q := url.Values{}
	for k, v := range map[string]string{"log_level": level, "node_id": nodeID, "server_id": serverID} {
		if v != "" {
			q.Set(k, v)
		}
	}
	if logJSON {
		q.Set("log_json", "true")
	}
	ctx := c.ctx
	if ctx == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
	}
	resp, err := client.Raw(ctx, api.RawRequest{Method: http.MethodGet, Path: "/v1/agent/monitor?" + q.Encode()})
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error starting monitor: %v", err))
		return exitError
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		c.Ui.Error(fmt.Sprintf("Error starting monitor: Unexpected response code: %d (%s)", resp.StatusCode, strings.TrimSpace(string(body))))
		return exitError
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var frame struct{ Data []byte }
		if err := dec.Decode(&frame); err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return exitOK
			}
			c.Ui.Error(fmt.Sprintf("Error reading the agent's log: %v", err))
			return exitError
		}
		if len(frame.Data) > 0 {
			c.Ui.Output(strings.TrimRight(string(frame.Data), "\n"))
		}
	}
}
