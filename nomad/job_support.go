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
	if p := structs.InstanceCountProblem(job.InstanceCount(), s.config.JobMaxCount); p != "" {
		problems = append(problems, p)
	}
	if err := s.State().NamespaceExists(job.Namespace); err != nil {
		problems = append(problems, fmt.Sprintf("namespace %q does not exist", job.Namespace))
	}
	if pool := job.NodePool; pool != "" {
		if p, err := s.State().NodePoolByName(nil, pool); err == nil && p == nil {
			problems = append(problems, fmt.Sprintf("nonexistent node pool %q", pool))
		}
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
		if len(s.serversOfRegion(job.Region)) > 0 {
			out = append(out, fmt.Sprintf("job region %q is not the request's region %q: send it to region %q", job.Region, s.config.Region, job.Region))
		} else {
			out = append(out, fmt.Sprintf("no path to region %q: this server is of region %q, and no server of %q is known in the gossip pool", job.Region, s.config.Region, job.Region))
		}
	}
	for _, tg := range job.TaskGroups {
		where := fmt.Sprintf("group %q", tg.Name)
		if d := tg.EphemeralDisk; d != nil && (d.Sticky || d.Migrate) {
			out = append(out, where+": ephemeral_disk sticky and migrate are not supported yet")
		}
		for _, t := range tg.Tasks {
			where := fmt.Sprintf("group %q task %q", tg.Name, t.Name)
			if t.Resources != nil && t.Resources.Cores > 0 {
				out = append(out, where+": resources.cores is not supported yet; use cpu (MHz)")
			}
		}
	}
	return out
}

// allowRegistration refuses a job registration, dispatch or scale with
// structs.ErrJobRegistrationDisabled while the scheduler configuration
// rejects them, unless the caller holds a management token. As upstream,
// with ACLs disabled there is no management token: all are refused.
func (s *Server) allowRegistration(secret string) error {
	_, cfg, err := s.State().SchedulerConfig(nil)
	if err != nil {
		return err
	}
	if !cfg.RejectJobRegistration {
		return nil
	}
	a, _, err := s.resolveToken(secret)
	if err != nil {
		return err
	}
	if a != nil && a.IsManagement() {
		return nil
	}
	s.logger.Warn("job registration for non-management ACL rejected")
	return structs.ErrJobRegistrationDisabled
}
