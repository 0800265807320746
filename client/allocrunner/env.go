package allocrunner

import (
	"maps"
	"strconv"
	"strings"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// NodeInfo is what a task's environment says about the node it runs on.
// Attributes and Meta are shared with the client's node and read only.
type NodeInfo struct {
	ID         string
	Name       string
	Datacenter string
	Region     string
	Class      string
	Pool       string
	Attributes map[string]string
	Meta       map[string]string
	// HostVolumes are the node's host volumes, for volume_mount.
	HostVolumes map[string]*structs.ClientHostVolumeConfig
}

// vars returns the ${...} names a job may use for this node: attr.<name>,
// meta.<name> and node.<field>, as in constraints.
func (n NodeInfo) vars() map[string]string {
	v := map[string]string{
		"node.unique.id":   n.ID,
		"node.unique.name": n.Name,
		"node.datacenter":  n.Datacenter,
		"node.region":      n.Region,
		"node.class":       n.Class,
		"node.pool":        n.Pool,
	}
	for k, val := range n.Attributes {
		v["attr."+k] = val
	}
	for k, val := range n.Meta {
		v["meta."+k] = val
	}
	return v
}

// interpolateConfig returns a copy of a task's driver config with every
// ${...} in its strings replaced: the task's environment (NOMAD_TASK_DIR
// and friends, the task's env) and the node's attr., meta. and node. names.
// Unknown names stay as written.
func interpolateConfig(config map[string]any, env map[string]string, node NodeInfo) map[string]any {
	if config == nil {
		return nil
	}
	vars := node.vars()
	maps.Copy(vars, env)
	return interpolateValue(config, vars).(map[string]any)
}

func interpolateValue(v any, vars map[string]string) any {
	switch x := v.(type) {
	case string:
		return interpolate(x, vars)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = interpolateValue(val, vars)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = interpolateValue(val, vars)
		}
		return out
	case []string:
		out := make([]string, len(x))
		for i, val := range x {
			out[i] = interpolate(val, vars)
		}
		return out
	case []map[string]any:
		out := make([]map[string]any, len(x))
		for i, val := range x {
			out[i] = interpolateValue(val, vars).(map[string]any)
		}
		return out
	}
	return v
}

// taskResources returns what the scheduler gave the task, falling back to
// what it asked for. memory_max is only ever the allocated value: the
// scheduler grants it when memory oversubscription is on and drops it
// when off, so the job's own value is never enforced.
func taskResources(alloc *structs.Allocation, task *structs.Task) drivers.Resources {
	if ar := alloc.AllocatedResources; ar != nil {
		if tr, ok := ar.Tasks[task.Name]; ok {
			return drivers.Resources{
				CPUShares:   int(tr.Cpu.CpuShares),
				MemoryMB:    int(tr.Memory.MemoryMB),
				MemoryMaxMB: int(tr.Memory.MemoryMaxMB),
			}
		}
	}
	if task.Resources != nil {
		return drivers.Resources{CPUShares: task.Resources.CPU, MemoryMB: task.Resources.MemoryMB}
	}
	return drivers.Resources{}
}

// envInput is what a task's environment is built from.
type envInput struct {
	alloc    *structs.Allocation
	task     *structs.Task
	allocDir *AllocDir
	taskDir  TaskDir
	node     NodeInfo
	// net is the allocation's bridge network; nil in host mode.
	net *allocnet.Status
}

// allocEnv is the part of every task's environment that is the
// allocation's, not one task's: its IDs and names, the job's, the node's,
// and NOMAD_META_* from the job's and group's meta with taskMeta over
// them. Group-level settings that take ${...} (network.hostname) are
// interpolated with it.
func allocEnv(alloc *structs.Allocation, node NodeInfo, taskMeta map[string]string) map[string]string {
	env := map[string]string{
		"NOMAD_ALLOC_ID":    alloc.ID,
		"NOMAD_ALLOC_NAME":  alloc.Name,
		"NOMAD_ALLOC_INDEX": strconv.FormatUint(uint64(alloc.Index()), 10),
		"NOMAD_GROUP_NAME":  alloc.TaskGroup,
		"NOMAD_JOB_ID":      alloc.JobID,
		"NOMAD_NAMESPACE":   alloc.Namespace,
	}
	if node.ID != "" {
		env["NOMAD_NODE_ID"] = node.ID
		env["NOMAD_NODE_NAME"] = node.Name
		env["NOMAD_DC"] = node.Datacenter
		env["NOMAD_REGION"] = node.Region
	}
	meta := map[string]string{}
	if job := alloc.Job; job != nil {
		env["NOMAD_JOB_NAME"] = job.Name
		if job.ParentID != "" {
			env["NOMAD_JOB_PARENT_ID"] = job.ParentID
		}
		if job.Region != "" {
			env["NOMAD_REGION"] = job.Region
		}
		maps.Copy(meta, job.Meta)
		if tg := job.LookupTaskGroup(alloc.TaskGroup); tg != nil {
			maps.Copy(meta, tg.Meta)
		}
	}
	maps.Copy(meta, taskMeta)
	for k, v := range meta {
		env["NOMAD_META_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))] = v
		env["NOMAD_META_"+k] = v
	}
	return env
}

// buildEnv returns the task's environment: the NOMAD_* variables, then the
// task's own env with ${NOMAD_...} references to them interpolated.
func buildEnv(in envInput) map[string]string {
	alloc, task, ad, td := in.alloc, in.task, in.allocDir, in.taskDir
	res := taskResources(alloc, task)
	env := allocEnv(alloc, in.node, task.Meta)
	maps.Copy(env, map[string]string{
		"NOMAD_TASK_NAME":    task.Name,
		"NOMAD_ALLOC_DIR":    ad.SharedDir,
		"NOMAD_TASK_DIR":     td.LocalDir,
		"NOMAD_SECRETS_DIR":  td.SecretsDir,
		"NOMAD_CPU_LIMIT":    strconv.Itoa(res.CPUShares),
		"NOMAD_MEMORY_LIMIT": strconv.Itoa(res.MemoryMB),
	})
	addPortEnv(env, alloc, in.net)
	if res.MemoryMaxMB > 0 {
		env["NOMAD_MEMORY_MAX_LIMIT"] = strconv.Itoa(res.MemoryMaxMB)
	}
	// The task's env refers to the NOMAD_* names, not to itself: resolve
	// against those alone so the result does not depend on map order.
	base := maps.Clone(env)
	for k, v := range task.Env {
		env[k] = interpolate(v, base)
	}
	return env
}

// interpolate replaces ${NAME} with vars[NAME]. References to unknown names
// are kept verbatim rather than emptied, so that a task that relies on its
// own shell to expand them still sees them.
func interpolate(s string, vars map[string]string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			break
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			break
		}
		name := s[i+2 : i+j]
		b.WriteString(s[:i])
		if v, ok := vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : i+j+1])
		}
		s = s[i+j+1:]
	}
	b.WriteString(s)
	return b.String()
}
