package command

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// jobFileFlags are the flags of the commands that parse a job file (job
// run, plan, validate): values for the file's variables.
type jobFileFlags struct {
	vars     stringList
	varFiles stringList
}

// register adds -var and -var-file, both repeatable, to flags.
func (f *jobFileFlags) register(flags *flag.FlagSet) {
	flags.Var(&f.vars, "var", "")
	flags.Var(&f.varFiles, "var-file", "")
}

// jobFileOptions is the help text of jobFileFlags.
func jobFileOptions() string {
	return strings.TrimSpace(`
Job File Options:

  -var 'name=value'
    Set the job file's variable "name". Repeatable; the last one for a
    name wins. A name the file does not declare is an error.

  -var-file=<path>
    Read variable values from a file of name = value lines (HCL), or a
    JSON object when the name ends in .json. Repeatable; later files win
    over earlier ones, and -var over every file. NOMAD_VAR_<name>
    environment variables are read too, below every file.
`)
}

// read parses a job file, or standard input for "-", with the variable
// values of the flags and the environment. Parse errors keep their
// file:line:column positions.
func (f *jobFileFlags) read(path string) (*api.Job, error) {
	opts := jobspec.Options{ArgVars: f.vars, VarFiles: f.varFiles, Env: os.Environ()}
	var job *api.Job
	var err error
	if path == "-" {
		src, rerr := io.ReadAll(os.Stdin)
		if rerr != nil {
			return nil, fmt.Errorf("reading standard input: %w", rerr)
		}
		job, err = jobspec.ParseWithOptions("<stdin>", src, opts)
	} else {
		job, err = jobspec.ParseFileWithOptions(path, opts)
	}
	if err != nil {
		return nil, fmt.Errorf("parsing job file %s:\n%w", path, err)
	}
	return job, nil
}
