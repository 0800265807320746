package command

import (
	"bytes"
	"encoding/json"
	"flag"
	"text/template"

	"github.com/nomad-edge/nomad/api"
)

// outputFlags are upstream's -json and -t of the read commands: the data a
// command read, as JSON or through a Go template, instead of its tables.
type outputFlags struct {
	json bool
	tmpl string
}

// register adds -json and -t to f.
func (o *outputFlags) register(f *flag.FlagSet) {
	f.BoolVar(&o.json, "json", false, "")
	f.StringVar(&o.tmpl, "t", "", "")
}

// set reports whether either flag was given.
func (o outputFlags) set() bool { return o.json || o.tmpl != "" }

// format renders v as asked.
func (o outputFlags) format(v any) (string, error) {
	switch {
	case o.json && o.tmpl != "":
		return "", userErrorf("Both json and template formatting are not allowed")
	case o.json:
		b, err := json.MarshalIndent(v, "", "    ")
		if err != nil {
			return "", userErrorf("Error formatting the data: %w", err)
		}
		return string(b), nil
	}
	t, err := template.New("format").Parse(o.tmpl)
	if err != nil {
		return "", userErrorf("Error parsing the template: %w", err)
	}
	var out bytes.Buffer
	if err := t.Execute(&out, v); err != nil {
		return "", userErrorf("Error executing the template: %w", err)
	}
	return out.String(), nil
}

// outputFlagsHelp is the help text of -json and -t.
const outputFlagsHelp = `
  -json
    Output the data read as JSON instead of tables.

  -t
    Format and display the data read using a Go template.`

// writeFormatted prints v per o and returns the exit code.
func (m *Meta) writeFormatted(o outputFlags, v any) int {
	s, err := o.format(v)
	if err != nil {
		m.Ui.Error(err.Error())
		return exitError
	}
	m.Ui.Output(s)
	return exitOK
}

// setupRead is setup for a read command: it also parses -json and -t.
func (m *Meta) setupRead(name string, args []string, nargs int, c helpCommand, out *outputFlags) (*api.Client, int, bool) {
	flags := m.FlagSet(name)
	out.register(flags)
	if !m.parseFlags(flags, args, c) {
		return nil, exitError, false
	}
	return m.clientFor(name, flags.NArg(), nargs)
}
