package jobspec

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nomad-edge/nomad/api"
)

// update decodes `update { max_parallel health_check min_healthy_time
// healthy_deadline progress_deadline auto_revert auto_promote canary
// stagger }`. health_check = "checks" is refused by name: it waits on
// service checks, and services are not implemented, so the job would
// deploy on task states without saying so. (Upstream's client fills
// "checks" in as the default; the server accepts that default, see
// UpdateStrategy in nomad/structs.)
func (p *parser) update(b *hclsyntax.Block, parent string) *api.UpdateStrategy {
	u := &api.UpdateStrategy{}
	where := blockWhere(b.Type, parent)
	p.updateBlocks = append(p.updateBlocks, b.TypeRange)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"max_parallel": func(a *hclsyntax.Attribute) { u.MaxParallel = p.intPtr(a, where) },
		"health_check": func(a *hclsyntax.Attribute) {
			s, ok := p.stringVal(a, where)
			if !ok {
				return
			}
			switch s {
			case "checks", "task_states", "manual":
				u.HealthCheck = &s
			default:
				p.errorf(a.SrcRange, "%s: health_check must be one of \"checks\", \"task_states\", \"manual\" (got %q)", where, s)
			}
		},
		"min_healthy_time":  func(a *hclsyntax.Attribute) { u.MinHealthyTime = p.durationPtr(a, where) },
		"healthy_deadline":  func(a *hclsyntax.Attribute) { u.HealthyDeadline = p.durationPtr(a, where) },
		"progress_deadline": func(a *hclsyntax.Attribute) { u.ProgressDeadline = p.durationPtr(a, where) },
		"auto_revert":       func(a *hclsyntax.Attribute) { u.AutoRevert = p.boolPtr(a, where) },
		"auto_promote":      func(a *hclsyntax.Attribute) { u.AutoPromote = p.boolPtr(a, where) },
		"canary":            func(a *hclsyntax.Attribute) { u.Canary = p.intPtr(a, where) },
		"stagger":           func(a *hclsyntax.Attribute) { u.Stagger = p.durationPtr(a, where) },
	}})
	return u
}

// refuseUpdateFor reports every update block of a batch or sysbatch job
// at its position, in upstream's words: their allocations run to
// completion, so there is nothing to roll out. The server refuses the same
// for jobs sent as JSON.
func (p *parser) refuseUpdateFor(j *api.Job) {
	if j.Type == nil || (*j.Type != api.JobTypeBatch && *j.Type != api.JobTypeSysbatch) {
		return
	}
	for _, rng := range p.updateBlocks {
		p.errorf(rng, "Job type %q does not allow update block", *j.Type)
	}
}

// migrate parses a migrate block (job or group).
func (p *parser) migrate(b *hclsyntax.Block, parent string) *api.MigrateStrategy {
	m := &api.MigrateStrategy{}
	where := blockWhere(b.Type, parent)
	p.walk(b.Body, where, schema{attrs: map[string]func(*hclsyntax.Attribute){
		"max_parallel":     func(a *hclsyntax.Attribute) { m.MaxParallel = p.intPtr(a, where) },
		"health_check":     func(a *hclsyntax.Attribute) { m.HealthCheck = p.stringPtr(a, where) },
		"min_healthy_time": func(a *hclsyntax.Attribute) { m.MinHealthyTime = p.durationPtr(a, where) },
		"healthy_deadline": func(a *hclsyntax.Attribute) { m.HealthyDeadline = p.durationPtr(a, where) },
	}})
	return m
}
