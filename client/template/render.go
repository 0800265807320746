package template

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// Input is one render of one template.
type Input struct {
	// Name names the template in errors ("template \"local/app.conf\"").
	Name                  string
	Text                  string
	LeftDelim, RightDelim string
	// ErrMissingKey fails the render on a missing map key instead of
	// printing "<no value>".
	ErrMissingKey bool
	// Env is the task's environment, for env.
	Env map[string]string
	// TaskDir is the task's directory: file reads under it only.
	TaskDir string
	// NoFileSandbox lets file read outside TaskDir (the client's
	// disable_file_sandbox).
	NoFileSandbox bool
	// Denied are functions the client's function_denylist forbids.
	Denied []string
	Source Source
}

// Result is a render's output and what it read.
type Result struct {
	Content []byte
	// Deps are the reads the render made, each with the index its data
	// was at: Watch on them waits for the next change.
	Deps map[Dep]uint64
	// Data is what each read returned, for a cache that renders the same
	// template again without the source (Snapshot).
	Data map[Dep]any
}

// Render renders in once. On an error the Result still holds the reads
// made so far, so that a render that hit ErrMissingVar can Watch them.
func Render(ctx context.Context, in Input) (*Result, error) {
	res := &Result{Deps: map[Dep]uint64{}, Data: map[Dep]any{}}
	r := &renderer{ctx: ctx, in: in, res: res}
	t := template.New(in.Name).Delims(in.LeftDelim, in.RightDelim).Funcs(r.funcs())
	if in.ErrMissingKey {
		t = t.Option("missingkey=error")
	}
	t, err := t.Parse(in.Text)
	if err != nil {
		return res, fmt.Errorf("%s: %w", in.Name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, nil); err != nil {
		if r.missing != nil {
			return res, r.missing
		}
		return res, fmt.Errorf("%s: %w", in.Name, err)
	}
	res.Content = buf.Bytes()
	return res, nil
}

type renderer struct {
	ctx     context.Context
	in      Input
	res     *Result
	missing error
}

// get reads d through the source once per render and records it.
func (r *renderer) get(d Dep) (any, error) {
	if v, ok := r.res.Data[d]; ok {
		return v, nil
	}
	if r.in.Source == nil {
		return nil, fmt.Errorf("%s: no data source for %s %q", r.in.Name, d.Kind, d.Arg)
	}
	v, idx, err := read(r.ctx, r.in.Source, d, 0)
	if err != nil {
		return nil, fmt.Errorf("reading %s %q: %w", d.Kind, d.Arg, err)
	}
	r.res.Deps[d], r.res.Data[d] = idx, v
	return v, nil
}

// Service is one instance as nomadService shows it, with upstream's
// field names.
type Service struct {
	ID, Name, Namespace, NodeID, Datacenter, JobID, AllocID, Address string
	Tags                                                             []string
	Port                                                             int
}

// ServiceSnippet is one service as nomadServices shows it.
type ServiceSnippet struct {
	Name string
	Tags []string
}

func (r *renderer) funcs() template.FuncMap {
	fm := template.FuncMap{
		"nomadVar": func(path string) (map[string]string, error) {
			v, err := r.get(Dep{"var", path})
			if err != nil {
				return nil, err
			}
			dv, _ := v.(*structs.VariableDecrypted)
			if dv == nil {
				r.missing = fmt.Errorf("%s: nomadVar %q: %w", r.in.Name, path, ErrMissingVar)
				return nil, r.missing
			}
			return maps.Clone(map[string]string(dv.Items)), nil
		},
		"nomadVarExists": func(path string) (bool, error) {
			v, err := r.get(Dep{"var", path})
			if err != nil {
				return false, err
			}
			dv, _ := v.(*structs.VariableDecrypted)
			return dv != nil, nil
		},
		"nomadVarList": func(prefix ...string) ([]*structs.VariableMetadata, error) {
			v, err := r.get(Dep{"varList", strings.Join(prefix, "")})
			if err != nil {
				return nil, err
			}
			list, _ := v.([]*structs.VariableMetadata)
			return list, nil
		},
		"nomadService": func(name string) ([]Service, error) {
			v, err := r.get(Dep{"service", name})
			if err != nil {
				return nil, err
			}
			regs, _ := v.([]*structs.ServiceRegistration)
			out := make([]Service, 0, len(regs))
			for _, s := range regs {
				out = append(out, Service{ID: s.ID, Name: s.ServiceName, Namespace: s.Namespace, NodeID: s.NodeID,
					Datacenter: s.Datacenter, JobID: s.JobID, AllocID: s.AllocID, Address: s.Address, Tags: s.Tags, Port: s.Port})
			}
			return out, nil
		},
		"nomadServices": func() ([]ServiceSnippet, error) {
			v, err := r.get(Dep{"services", ""})
			if err != nil {
				return nil, err
			}
			stubs, _ := v.([]*structs.ServiceRegistrationStub)
			out := make([]ServiceSnippet, 0, len(stubs))
			for _, s := range stubs {
				out = append(out, ServiceSnippet{Name: s.ServiceName, Tags: s.Tags})
			}
			return out, nil
		},
		"env":  func(k string) string { return r.in.Env[k] },
		"file": r.file,
	}
	maps.Copy(fm, helpers)
	for _, name := range refused {
		fm[name] = refusedFunc(name)
	}
	for _, name := range r.in.Denied {
		fm[name] = deniedFunc(name)
	}
	return fm
}

// file reads a file under the task's directory; a path that leaves it is
// an error, since the client reads it with its own rights.
func (r *renderer) file(path string) (string, error) {
	if r.in.TaskDir == "" {
		return "", fmt.Errorf("file %q: no task directory", path)
	}
	full := filepath.Join(r.in.TaskDir, path)
	if filepath.IsAbs(path) {
		full = filepath.Clean(path)
	}
	rel, err := filepath.Rel(r.in.TaskDir, full)
	if !r.in.NoFileSandbox && (err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))) {
		return "", fmt.Errorf("file %q: outside the task directory", path)
	}
	b, err := os.ReadFile(full)
	if err != nil {
		return "", fmt.Errorf("file %q: %w", path, err)
	}
	return string(b), nil
}
