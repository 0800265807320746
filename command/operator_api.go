package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// OperatorAPICommand is `nomad operator api`: any API request with the
// CLI's address, token and TLS settings, its answer printed as it comes,
// so a stream (/v1/event/stream) prints each line as it arrives.
type OperatorAPICommand struct {
	Meta
	// Stdin is where a request body is read from; nil reads none.
	Stdin io.Reader
}

// Synopsis implements cli.Command.
func (c *OperatorAPICommand) Synopsis() string { return "Query the Nomad HTTP API" }

// Help implements cli.Command.
func (c *OperatorAPICommand) Help() string {
	return strings.TrimSpace(`
Usage: nomad operator api [options] <path>

  Send a request to the agent's HTTP API with the CLI's address, token and
  TLS settings, and print the answer as it arrives. <path> starts with /v1/
  and may carry a query. A body piped on standard input is sent, and makes
  the method POST unless -X says otherwise.

      $ nomad operator api /v1/jobs
      $ nomad operator api '/v1/event/stream?topic=Node'

  It exits 0 for a 2xx answer and 1 otherwise, printing the body either way.

` + generalOptions() + `

API Options:

  -X <method>
    The HTTP method; GET by default, POST when a body is piped in.

  -H <header>
    A header to add, as "Name: value"; repeatable.

  -filter <expression>
    Sets the filter query parameter.

  -dryrun
    Print the request as a curl command instead of sending it. The token
    is shown as $NOMAD_TOKEN, never its value.

  -verbose
    Print the answer's status and headers before its body.
`)
}

// Run implements cli.Command.
func (c *OperatorAPICommand) Run(args []string) int {
	var method, filter string
	var dryrun, verbose bool
	header := http.Header{}
	flags := c.FlagSet("operator api")
	flags.StringVar(&method, "X", "", "")
	flags.StringVar(&filter, "filter", "", "")
	flags.BoolVar(&dryrun, "dryrun", false, "")
	flags.BoolVar(&verbose, "verbose", false, "")
	flags.Func("H", "", func(s string) error {
		name, value, ok := strings.Cut(s, ":")
		if !ok || strings.TrimSpace(name) == "" {
			return fmt.Errorf("header %q: use \"Name: value\"", s)
		}
		header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
		return nil
	})
	if !c.parseFlags(flags, args, c) {
		return exitError
	}
	if flags.NArg() != 1 {
		return c.argsError("This command takes one argument: <path>", "operator api")
	}
	path := flags.Arg(0)
	if filter != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "filter=" + url.QueryEscape(filter)
	}
	body, err := c.body()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the request body: %v", err))
		return exitError
	}
	if method == "" {
		method = http.MethodGet
		if body != nil {
			method = http.MethodPost
		}
	}
	client, err := c.Client()
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error initializing client: %v", err))
		return exitError
	}
	if dryrun {
		return c.printCurl(client, method, path, header, body != nil)
	}
	req := api.RawRequest{Method: method, Path: path, Header: header}
	if body != nil {
		req.Body = strings.NewReader(string(body))
	}
	resp, err := client.Raw(context.Background(), req)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error sending the request: %v", err))
		return exitError
	}
	defer resp.Body.Close()
	if verbose {
		c.Ui.Output(resp.Proto + " " + resp.Status)
		for _, k := range sortedHeaderNames(resp.Header) {
			c.Ui.Output(k + ": " + strings.Join(resp.Header[k], ", "))
		}
		c.Ui.Output("")
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if err := c.copyLines(resp.Body, ok); err != nil {
		c.Ui.Error(fmt.Sprintf("Error reading the answer: %v", err))
		return exitError
	}
	if !ok {
		return exitError
	}
	return exitOK
}

// body reads a piped request body; a terminal, or nothing, is no body.
func (c *OperatorAPICommand) body() ([]byte, error) {
	if c.Stdin == nil {
		return nil, nil
	}
	if f, ok := c.Stdin.(*os.File); ok {
		if st, err := f.Stat(); err != nil || st.Mode()&os.ModeCharDevice != 0 {
			return nil, nil
		}
	}
	b, err := io.ReadAll(c.Stdin)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	return b, nil
}

// copyLines prints the answer line by line as it arrives: to the output
// for a success, to the error stream otherwise.
func (c *OperatorAPICommand) copyLines(r io.Reader, ok bool) error {
	print := c.Ui.Output
	if !ok {
		print = c.Ui.Error
	}
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			print(strings.TrimSuffix(line, "\n"))
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (c *OperatorAPICommand) printCurl(client *api.Client, method, path string, header http.Header, body bool) int {
	u, err := client.RawURL(path)
	if err != nil {
		c.Ui.Error(fmt.Sprintf("Error: %v", err))
		return exitError
	}
	parts := []string{"curl", "-X", method}
	for _, k := range sortedHeaderNames(header) {
		for _, v := range header[k] {
			parts = append(parts, "-H", shellQuote(k+": "+v))
		}
	}
	if os.Getenv(api.EnvToken) != "" || c.token != "" {
		parts = append(parts, "-H", `"X-Nomad-Token: ${NOMAD_TOKEN}"`)
	}
	if body {
		parts = append(parts, "--data-binary", "@-")
	}
	c.Ui.Output(strings.Join(append(parts, shellQuote(u.String())), " "))
	return exitOK
}

func sortedHeaderNames(h http.Header) []string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
