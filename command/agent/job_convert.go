package agent

import (
	"maps"
	"slices"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// APIJobToStructJob canonicalizes a wire job (filling the defaults a job
// file may leave out, exactly as upstream's client does) and converts it to
// the server's model. Every field jobspec can produce is carried over;
// server-owned fields (status, versions, indexes) are left for the server.
// The task config map is passed as is: it belongs to the driver.
func APIJobToStructJob(job *api.Job) *structs.Job {
	job.Canonicalize()
	out := &structs.Job{
		ID:          deref(job.ID),
		Name:        deref(job.Name),
		Namespace:   deref(job.Namespace),
		Region:      deref(job.Region),
		Type:        deref(job.Type),
		Priority:    deref(job.Priority),
		AllAtOnce:   deref(job.AllAtOnce),
		Datacenters: slices.Clone(job.Datacenters),
		NodePool:    deref(job.NodePool),
		Constraints: convertConstraints(job.Constraints),
		Affinities:  convertAffinities(job.Affinities),
		Spreads:     convertSpreads(job.Spreads),
		Meta:        maps.Clone(job.Meta),
		ParentID:    deref(job.ParentID),
		Stop:        deref(job.Stop),
		Update:      convertUpdate(job.Update),

		Periodic:         convertPeriodic(job.Periodic),
		ParameterizedJob: convertParameterized(job.ParameterizedJob),
		Dispatched:       job.Dispatched,
		Payload:          slices.Clone(job.Payload),
	}
	for _, g := range job.TaskGroups {
		out.TaskGroups = append(out.TaskGroups, convertTaskGroup(g))
	}
	return out
}

func convertTaskGroup(g *api.TaskGroup) *structs.TaskGroup {
	out := &structs.TaskGroup{
		Name:                      deref(g.Name),
		Count:                     deref(g.Count),
		Constraints:               convertConstraints(g.Constraints),
		Affinities:                convertAffinities(g.Affinities),
		Spreads:                   convertSpreads(g.Spreads),
		RestartPolicy:             convertRestart(g.RestartPolicy),
		ReschedulePolicy:          convertReschedule(g.ReschedulePolicy),
		Meta:                      maps.Clone(g.Meta),
		MaxClientDisconnect:       clonePtr(g.MaxClientDisconnect),
		StopAfterClientDisconnect: clonePtr(g.StopAfterClientDisconnect),
		Update:                    convertUpdate(g.Update),
		Migrate:                   convertMigrate(g.Migrate),
		ShutdownDelay:             clonePtr(g.ShutdownDelay),
		Services:                  convertServices(g.Services),
		Scaling:                   convertScaling(g.Scaling),
		Volumes:                   convertVolumes(g.Volumes),
	}
	if d := g.EphemeralDisk; d != nil {
		out.EphemeralDisk = &structs.EphemeralDisk{
			Sticky:  deref(d.Sticky),
			Migrate: deref(d.Migrate),
			SizeMB:  deref(d.SizeMB),
		}
	}
	if d := g.Disconnect; d != nil {
		out.Disconnect = &structs.DisconnectStrategy{
			LostAfter:         deref(d.LostAfter),
			StopOnClientAfter: clonePtr(d.StopOnClientAfter),
			Replace:           clonePtr(d.Replace),
			Reconcile:         deref(d.Reconcile),
			OfflineRestart:    clonePtr(d.OfflineRestart),
		}
	}
	for _, n := range g.Networks {
		if n != nil {
			out.Networks = append(out.Networks, &structs.NetworkResource{
				Mode:          n.Mode,
				ReservedPorts: convertPorts(n.ReservedPorts),
				DynamicPorts:  convertPorts(n.DynamicPorts),
				DNS:           convertDNS(n.DNS),
				Hostname:      n.Hostname,
			})
		}
	}
	for _, t := range g.Tasks {
		out.Tasks = append(out.Tasks, convertTask(t))
	}
	return out
}

func convertDNS(d *api.DNSConfig) *structs.DNSConfig {
	if d == nil {
		return nil
	}
	return &structs.DNSConfig{Servers: slices.Clone(d.Servers), Searches: slices.Clone(d.Searches), Options: slices.Clone(d.Options)}
}

func convertPorts(ps []api.Port) []structs.Port {
	if ps == nil {
		return nil
	}
	out := make([]structs.Port, len(ps))
	for i, p := range ps {
		out[i] = structs.Port{Label: p.Label, Value: p.Value, To: p.To, HostNetwork: p.HostNetwork}
	}
	return out
}

func convertTask(t *api.Task) *structs.Task {
	out := &structs.Task{
		Name:          t.Name,
		Driver:        t.Driver,
		User:          t.User,
		Config:        t.Config,
		Env:           maps.Clone(t.Env),
		Constraints:   convertConstraints(t.Constraints),
		Affinities:    convertAffinities(t.Affinities),
		RestartPolicy: convertRestart(t.RestartPolicy),
		Meta:          maps.Clone(t.Meta),
		KillTimeout:   deref(t.KillTimeout),
		KillSignal:    t.KillSignal,
		ShutdownDelay: t.ShutdownDelay,
		Leader:        t.Leader,
		Services:      convertServices(t.Services),
		VolumeMounts:  convertVolumeMounts(t.VolumeMounts),
	}
	if d := t.DispatchPayload; d != nil {
		out.DispatchPayload = &structs.DispatchPayloadConfig{File: d.File}
	}
	out.Artifacts = convertArtifacts(t.Artifacts)
	out.Identity = convertIdentity(t.Identity)
	for _, w := range t.Identities {
		out.Identities = append(out.Identities, convertIdentity(w))
	}
	out.Templates = convertTemplates(t.Templates)
	if l := t.Lifecycle; !l.Empty() {
		// An empty block (the official client keeps one) says nothing:
		// a main task. A sidecar without a hook is left for validation.
		out.Lifecycle = &structs.TaskLifecycleConfig{Hook: l.Hook, Sidecar: l.Sidecar}
	}
	if l := t.LogConfig; l != nil {
		out.LogConfig = structs.DefaultLogConfig()
		if l.MaxFiles != nil {
			out.LogConfig.MaxFiles = *l.MaxFiles
		}
		if l.MaxFileSizeMB != nil {
			out.LogConfig.MaxFileSizeMB = *l.MaxFileSizeMB
		}
	}
	if r := t.Resources; r != nil {
		out.Resources = &structs.Resources{
			CPU:         deref(r.CPU),
			Cores:       deref(r.Cores),
			MemoryMB:    deref(r.MemoryMB),
			MemoryMaxMB: deref(r.MemoryMaxMB),
			DiskMB:      deref(r.DiskMB),
		}
	}
	return out
}

func convertUpdate(u *api.UpdateStrategy) *structs.UpdateStrategy {
	if u == nil {
		return nil
	}
	return &structs.UpdateStrategy{
		Stagger:          deref(u.Stagger),
		MaxParallel:      deref(u.MaxParallel),
		HealthCheck:      deref(u.HealthCheck),
		MinHealthyTime:   deref(u.MinHealthyTime),
		HealthyDeadline:  deref(u.HealthyDeadline),
		ProgressDeadline: deref(u.ProgressDeadline),
		AutoRevert:       deref(u.AutoRevert),
		AutoPromote:      deref(u.AutoPromote),
		Canary:           deref(u.Canary),
	}
}

func convertPeriodic(p *api.PeriodicConfig) *structs.PeriodicConfig {
	if p == nil {
		return nil
	}
	return &structs.PeriodicConfig{
		Enabled:         p.Enabled == nil || *p.Enabled,
		Spec:            deref(p.Spec),
		Specs:           slices.Clone(p.Specs),
		SpecType:        deref(p.SpecType),
		ProhibitOverlap: deref(p.ProhibitOverlap),
		TimeZone:        deref(p.TimeZone),
	}
}

func convertParameterized(c *api.ParameterizedJobConfig) *structs.ParameterizedJobConfig {
	if c == nil {
		return nil
	}
	return &structs.ParameterizedJobConfig{
		Payload:      c.Payload,
		MetaRequired: slices.Clone(c.MetaRequired),
		MetaOptional: slices.Clone(c.MetaOptional),
	}
}

func convertMigrate(m *api.MigrateStrategy) *structs.MigrateStrategy {
	if m == nil {
		return nil
	}
	return &structs.MigrateStrategy{
		MaxParallel:     deref(m.MaxParallel),
		HealthCheck:     deref(m.HealthCheck),
		MinHealthyTime:  deref(m.MinHealthyTime),
		HealthyDeadline: deref(m.HealthyDeadline),
	}
}

func convertRestart(r *api.RestartPolicy) *structs.RestartPolicy {
	if r == nil {
		return nil
	}
	return &structs.RestartPolicy{
		Attempts:        deref(r.Attempts),
		Interval:        deref(r.Interval),
		Delay:           deref(r.Delay),
		Mode:            deref(r.Mode),
		RenderTemplates: deref(r.RenderTemplates),
	}
}

func convertReschedule(r *api.ReschedulePolicy) *structs.ReschedulePolicy {
	if r == nil {
		return nil
	}
	return &structs.ReschedulePolicy{
		Attempts:      deref(r.Attempts),
		Interval:      deref(r.Interval),
		Delay:         deref(r.Delay),
		DelayFunction: deref(r.DelayFunction),
		MaxDelay:      deref(r.MaxDelay),
		Unlimited:     deref(r.Unlimited),
	}
}

func convertConstraints(in []*api.Constraint) []*structs.Constraint {
	if in == nil {
		return nil
	}
	out := make([]*structs.Constraint, 0, len(in))
	for _, c := range in {
		out = append(out, &structs.Constraint{LTarget: c.LTarget, RTarget: c.RTarget, Operand: c.Operand})
	}
	return out
}

func convertAffinities(in []*api.Affinity) []*structs.Affinity {
	if in == nil {
		return nil
	}
	out := make([]*structs.Affinity, 0, len(in))
	for _, a := range in {
		out = append(out, &structs.Affinity{LTarget: a.LTarget, RTarget: a.RTarget, Operand: a.Operand, Weight: deref(a.Weight)})
	}
	return out
}

func convertSpreads(in []*api.Spread) []*structs.Spread {
	if in == nil {
		return nil
	}
	out := make([]*structs.Spread, 0, len(in))
	for _, s := range in {
		sp := &structs.Spread{Attribute: s.Attribute, Weight: api.DefaultSpreadWeight}
		if s.Weight != nil {
			sp.Weight = *s.Weight
		}
		for _, t := range s.SpreadTarget {
			sp.SpreadTarget = append(sp.SpreadTarget, &structs.SpreadTarget{Value: t.Value, Percent: t.Percent})
		}
		out = append(out, sp)
	}
	return out
}

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
