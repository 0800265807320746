package jobspec

import (
	"fmt"

	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// job decodes `job "<id>" { ... }`. The label is the job's ID and, since
// job files have no separate name, its name too.
func (p *parser) job(b *hclsyntax.Block, id string) *api.Job {
	j := &api.Job{ID: new(id), Name: new(id)}
	where := fmt.Sprintf("job %q", id)
	var disconnect *api.DisconnectStrategy

	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"region":      func(a *hclsyntax.Attribute) { j.Region = p.stringPtr(a, where) },
			"namespace":   func(a *hclsyntax.Attribute) { j.Namespace = p.stringPtr(a, where) },
			"datacenters": func(a *hclsyntax.Attribute) { j.Datacenters = p.stringList(a, where) },
			"type":        func(a *hclsyntax.Attribute) { j.Type = p.stringPtr(a, where) },
			"priority":    func(a *hclsyntax.Attribute) { j.Priority = p.intPtr(a, where) },
			"node_pool":   func(a *hclsyntax.Attribute) { j.NodePool = p.stringPtr(a, where) },
			"all_at_once": func(a *hclsyntax.Attribute) { j.AllAtOnce = p.boolPtr(a, where) },
			"meta":        func(a *hclsyntax.Attribute) { j.Meta = p.stringMapAttr(a, where) },
		},
		blocks: map[string]blockSpec{
			"meta": {decode: func(b *hclsyntax.Block, _ string) { j.Meta = p.stringMapBlock(b, where) }},
			"constraint": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if c := p.constraint(b, where); c != nil {
					j.Constraints = append(j.Constraints, c)
				}
			}},
			"affinity": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if a := p.affinity(b, where); a != nil {
					j.Affinities = append(j.Affinities, a)
				}
			}},
			"spread": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				j.Spreads = append(j.Spreads, p.spread(b, where))
			}},
			"disconnect": {decode: func(b *hclsyntax.Block, _ string) {
				disconnect = p.disconnect(b, where)
			}},
			"update": {decode: func(b *hclsyntax.Block, _ string) { j.Update = p.update(b, where) }},
			// Job-level reschedule and migrate are defaults for every
			// group, merged field by field under the group's own when
			// the job is canonicalized, as upstream.
			"reschedule": {decode: func(b *hclsyntax.Block, _ string) { j.Reschedule = p.reschedule(b, where) }},
			"migrate":    {decode: func(b *hclsyntax.Block, _ string) { j.Migrate = p.migrate(b, where) }},
			"periodic":   {decode: func(b *hclsyntax.Block, _ string) { j.Periodic = p.periodic(b, where) }},
			"parameterized": {decode: func(b *hclsyntax.Block, _ string) {
				j.ParameterizedJob = p.parameterized(b, where)
			}},
			"group": {label: "group name", multi: true, decode: func(b *hclsyntax.Block, name string) {
				j.TaskGroups = append(j.TaskGroups, p.group(b, name))
			}},
		},
	})

	p.refuseUpdateFor(j)

	// A job-level disconnect block is shorthand for the same block in every
	// group that configures no disconnect behaviour of its own (neither the
	// block nor the legacy fields). Resolving it here keeps the wire shape
	// upstream's, which has no job-level field.
	if disconnect != nil {
		for _, g := range j.TaskGroups {
			if g.Disconnect == nil && g.MaxClientDisconnect == nil && g.StopAfterClientDisconnect == nil {
				g.Disconnect = copyDisconnect(disconnect)
			}
		}
	}
	return j
}

func copyDisconnect(d *api.DisconnectStrategy) *api.DisconnectStrategy {
	c := &api.DisconnectStrategy{}
	if d.LostAfter != nil {
		c.LostAfter = new(*d.LostAfter)
	}
	if d.StopOnClientAfter != nil {
		c.StopOnClientAfter = new(*d.StopOnClientAfter)
	}
	if d.Replace != nil {
		c.Replace = new(*d.Replace)
	}
	if d.Reconcile != nil {
		c.Reconcile = new(*d.Reconcile)
	}
	if d.OfflineRestart != nil {
		c.OfflineRestart = new(*d.OfflineRestart)
	}
	return c
}

// group decodes `group "<name>" { ... }`.
func (p *parser) group(b *hclsyntax.Block, name string) *api.TaskGroup {
	g := &api.TaskGroup{Name: new(name)}
	where := fmt.Sprintf("group %q", name)

	p.walk(b.Body, where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"count": func(a *hclsyntax.Attribute) { g.Count = p.intPtr(a, where) },
			"max_client_disconnect": func(a *hclsyntax.Attribute) {
				g.MaxClientDisconnect = p.durationPtr(a, where)
			},
			"stop_after_client_disconnect": func(a *hclsyntax.Attribute) {
				g.StopAfterClientDisconnect = p.durationPtr(a, where)
			},
			"meta":           func(a *hclsyntax.Attribute) { g.Meta = p.stringMapAttr(a, where) },
			"shutdown_delay": func(a *hclsyntax.Attribute) { g.ShutdownDelay = p.durationPtr(a, where) },
		},
		blocks: map[string]blockSpec{
			"meta": {decode: func(b *hclsyntax.Block, _ string) { g.Meta = p.stringMapBlock(b, where) }},
			"constraint": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if c := p.constraint(b, where); c != nil {
					g.Constraints = append(g.Constraints, c)
				}
			}},
			"affinity": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if a := p.affinity(b, where); a != nil {
					g.Affinities = append(g.Affinities, a)
				}
			}},
			"spread": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				g.Spreads = append(g.Spreads, p.spread(b, where))
			}},
			"restart": {decode: func(b *hclsyntax.Block, _ string) {
				g.RestartPolicy = p.restart(b, where)
			}},
			"reschedule": {decode: func(b *hclsyntax.Block, _ string) {
				g.ReschedulePolicy = p.reschedule(b, where)
			}},
			"ephemeral_disk": {decode: func(b *hclsyntax.Block, _ string) {
				g.EphemeralDisk = p.ephemeralDisk(b, where)
			}},
			"disconnect": {decode: func(b *hclsyntax.Block, _ string) {
				g.Disconnect = p.disconnect(b, where)
			}},
			"update":  {decode: func(b *hclsyntax.Block, _ string) { g.Update = p.update(b, where) }},
			"migrate": {decode: func(b *hclsyntax.Block, _ string) { g.Migrate = p.migrate(b, where) }},
			"scaling": {decode: func(b *hclsyntax.Block, _ string) { g.Scaling = p.scaling(b, where) }},
			"network": {decode: func(b *hclsyntax.Block, _ string) {
				g.Networks = append(g.Networks, p.network(b, where))
			}},
			"task": {label: "task name", multi: true, decode: func(b *hclsyntax.Block, name string) {
				g.Tasks = append(g.Tasks, p.task(b, name))
			}},
			"service": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				g.Services = append(g.Services, p.service(b, where))
			}},
			"volume": {label: "volume name", multi: true, decode: func(b *hclsyntax.Block, n string) { p.volume(b, n, where, g) }},
		},
	})
	return g
}

// task decodes `task "<name>" { ... }`.
func (p *parser) task(b *hclsyntax.Block, name string) *api.Task {
	t := &api.Task{Name: name}
	where := fmt.Sprintf("task %q", name)

	p.walk(p.withoutTaskScaling(b.Body, where), where, schema{
		attrs: map[string]func(*hclsyntax.Attribute){
			"driver": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					t.Driver = s
				}
			},
			"user": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					t.User = s
				}
			},
			"kill_timeout": func(a *hclsyntax.Attribute) { t.KillTimeout = p.durationPtr(a, where) },
			"shutdown_delay": func(a *hclsyntax.Attribute) {
				if d := p.durationPtr(a, where); d != nil {
					t.ShutdownDelay = *d
				}
			},
			"kill_signal": func(a *hclsyntax.Attribute) {
				if s, ok := p.stringVal(a, where); ok {
					t.KillSignal = s
				}
			},
			"leader": func(a *hclsyntax.Attribute) {
				if v := p.boolPtr(a, where); v != nil {
					t.Leader = *v
				}
			},
			"meta": func(a *hclsyntax.Attribute) { t.Meta = p.stringMapAttr(a, where) },
			"env":  func(a *hclsyntax.Attribute) { t.Env = p.stringMapAttr(a, where) },
		},
		blocks: map[string]blockSpec{
			"config": {decode: func(b *hclsyntax.Block, _ string) {
				t.Config = p.freeform(b.Body, blockWhere("config", where))
			}},
			"env":  {decode: func(b *hclsyntax.Block, _ string) { t.Env = p.stringMapBlock(b, where) }},
			"meta": {decode: func(b *hclsyntax.Block, _ string) { t.Meta = p.stringMapBlock(b, where) }},
			"resources": {decode: func(b *hclsyntax.Block, _ string) {
				t.Resources = p.resources(b, where)
			}},
			"restart": {decode: func(b *hclsyntax.Block, _ string) {
				t.RestartPolicy = p.restart(b, where)
			}},
			"logs": {decode: func(b *hclsyntax.Block, _ string) {
				t.LogConfig = p.logs(b, where)
			}},
			"dispatch_payload": {decode: func(b *hclsyntax.Block, _ string) {
				t.DispatchPayload = p.dispatchPayload(b, where)
			}},
			"artifact": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				t.Artifacts = append(t.Artifacts, p.artifact(b, where))
			}},
			"lifecycle": {decode: func(b *hclsyntax.Block, _ string) { t.Lifecycle = p.lifecycle(b, where) }},
			"identity":  {multi: true, decode: func(b *hclsyntax.Block, _ string) { p.identity(b, where, t) }},
			"template": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				t.Templates = append(t.Templates, p.template(b, where))
			}},
			"volume_mount": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				t.VolumeMounts = append(t.VolumeMounts, p.volumeMount(b, where))
			}},
			"service": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				t.Services = append(t.Services, p.service(b, where))
			}},
			"constraint": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if c := p.constraint(b, where); c != nil {
					t.Constraints = append(t.Constraints, c)
				}
			}},
			"affinity": {multi: true, decode: func(b *hclsyntax.Block, _ string) {
				if a := p.affinity(b, where); a != nil {
					t.Affinities = append(t.Affinities, a)
				}
			}},
		},
	})
	return t
}

// logs decodes `logs { max_files max_file_size }` (size in MB).
func (p *parser) logs(b *hclsyntax.Block, parent string) *api.LogConfig {
	l := &api.LogConfig{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"max_files":     func(a *hclsyntax.Attribute) { l.MaxFiles = p.intPtr(a, where) },
		"max_file_size": func(a *hclsyntax.Attribute) { l.MaxFileSizeMB = p.intPtr(a, where) },
	}})
	return l
}

// resources decodes `resources { cpu cores memory memory_max }`.
func (p *parser) resources(b *hclsyntax.Block, parent string) *api.Resources {
	r := &api.Resources{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"cpu":        func(a *hclsyntax.Attribute) { r.CPU = p.intPtr(a, where) },
		"cores":      func(a *hclsyntax.Attribute) { r.Cores = p.intPtr(a, where) },
		"memory":     func(a *hclsyntax.Attribute) { r.MemoryMB = p.intPtr(a, where) },
		"memory_max": func(a *hclsyntax.Attribute) { r.MemoryMaxMB = p.intPtr(a, where) },
	}})
	return r
}

// restart decodes `restart { attempts interval delay mode }`.
func (p *parser) restart(b *hclsyntax.Block, parent string) *api.RestartPolicy {
	r := &api.RestartPolicy{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"attempts": func(a *hclsyntax.Attribute) { r.Attempts = p.intPtr(a, where) },
		"interval": func(a *hclsyntax.Attribute) { r.Interval = p.durationPtr(a, where) },
		"delay":    func(a *hclsyntax.Attribute) { r.Delay = p.durationPtr(a, where) },
		"mode":     func(a *hclsyntax.Attribute) { r.Mode = p.stringPtr(a, where) },
	}})
	return r
}

// reschedule decodes `reschedule { attempts interval delay delay_function
// max_delay unlimited }`.
func (p *parser) reschedule(b *hclsyntax.Block, parent string) *api.ReschedulePolicy {
	r := &api.ReschedulePolicy{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"attempts":       func(a *hclsyntax.Attribute) { r.Attempts = p.intPtr(a, where) },
		"interval":       func(a *hclsyntax.Attribute) { r.Interval = p.durationPtr(a, where) },
		"delay":          func(a *hclsyntax.Attribute) { r.Delay = p.durationPtr(a, where) },
		"delay_function": func(a *hclsyntax.Attribute) { r.DelayFunction = p.stringPtr(a, where) },
		"max_delay":      func(a *hclsyntax.Attribute) { r.MaxDelay = p.durationPtr(a, where) },
		"unlimited":      func(a *hclsyntax.Attribute) { r.Unlimited = p.boolPtr(a, where) },
	}})
	return r
}

// ephemeralDisk decodes `ephemeral_disk { size sticky migrate }`; size is
// in MB.
func (p *parser) ephemeralDisk(b *hclsyntax.Block, parent string) *api.EphemeralDisk {
	d := &api.EphemeralDisk{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"size":    func(a *hclsyntax.Attribute) { d.SizeMB = p.intPtr(a, where) },
		"sticky":  func(a *hclsyntax.Attribute) { d.Sticky = p.boolPtr(a, where) },
		"migrate": func(a *hclsyntax.Attribute) { d.Migrate = p.boolPtr(a, where) },
	}})
	return d
}

// disconnect decodes `disconnect { lost_after stop_on_client_after replace
// reconcile offline_restart }` (offline_restart is ours, beyond upstream). Whether the combination makes sense (both windows set, an
// unknown reconcile strategy) is validation, done by the server.
func (p *parser) disconnect(b *hclsyntax.Block, parent string) *api.DisconnectStrategy {
	d := &api.DisconnectStrategy{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"lost_after":           func(a *hclsyntax.Attribute) { d.LostAfter = p.durationPtr(a, where) },
		"stop_on_client_after": func(a *hclsyntax.Attribute) { d.StopOnClientAfter = p.durationPtr(a, where) },
		"replace":              func(a *hclsyntax.Attribute) { d.Replace = p.boolPtr(a, where) },
		"reconcile":            func(a *hclsyntax.Attribute) { d.Reconcile = p.stringPtr(a, where) },
		"offline_restart":      func(a *hclsyntax.Attribute) { d.OfflineRestart = p.boolPtr(a, where) },
	}})
	return d
}
