package nomad

import (
	"errors"
	"fmt"
	"slices"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// jobProblems lists every problem with a job at once: what is invalid and
// what this server cannot do yet.
func (s *Server) jobProblems(job *structs.Job) []string {
	var problems []string
	if err := job.Validate(); err != nil {
		var v *structs.ValidationError
		if errors.As(err, &v) {
			problems = v.Problems
		} else {
			problems = []string{err.Error()}
		}
	}
	if err := s.State().NamespaceExists(job.Namespace); err != nil {
		problems = append(problems, fmt.Sprintf("namespace %q does not exist", job.Namespace))
	}
	return append(problems, s.unsupported(job)...)
}

// unsupported lists what a valid job asks for that this server cannot do
// yet. Accepting such a job would run it without what it asked for, or
// never run it at all; refusing it names the setting instead.
func (s *Server) unsupported(job *structs.Job) []string {
	var out []string
	if !slices.Contains(s.config.EnabledSchedulers, job.Type) {
		out = append(out, fmt.Sprintf("job type %q is not supported yet (this server schedules %v)", job.Type, s.config.EnabledSchedulers))
	}
	if job.Region != s.config.Region {
		out = append(out, fmt.Sprintf("no path to region %q: this cluster is region %q", job.Region, s.config.Region))
	}
	constraint := func(where string, cs []*structs.Constraint) {
		for _, c := range cs {
			if c.Operand == structs.ConstraintDistinctProperty {
				out = append(out, fmt.Sprintf("%s: constraint operator %q is not supported yet", where, c.Operand))
			}
		}
	}
	constraint("job", job.Constraints)
	for _, tg := range job.TaskGroups {
		where := fmt.Sprintf("group %q", tg.Name)
		constraint(where, tg.Constraints)
		if d := tg.EphemeralDisk; d != nil && (d.Sticky || d.Migrate) {
			out = append(out, where+": ephemeral_disk sticky and migrate are not supported yet")
		}
		for _, t := range tg.Tasks {
			where := fmt.Sprintf("group %q task %q", tg.Name, t.Name)
			constraint(where, t.Constraints)
			if t.Resources != nil && t.Resources.Cores > 0 {
				out = append(out, where+": resources.cores is not supported yet; use cpu (MHz)")
			}
		}
	}
	return out
}
