package audit

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shoenig/test/must"
)

// keyTypes are the structs whose fields are the keys an operator writes:
// the agent's config blocks as parsed, the client's config they become,
// and the job, in its wire form (api, what jobspec and JSON produce) and
// in the servers' model. Every field must be read by code that acts on it.
var keyTypes = map[string][]string{
	"github.com/nomad-edge/nomad/command/agent": {"Config", "Addresses", "AdvertiseAddrs", "Ports",
		"ServerConfig", "ClientConfig", "ServerJoin", "TLSConfig", "ACLConfig", "PluginConfig", "Limits", "Telemetry",
		"HostNetworkConfig", "ReservedConfig"},
	"github.com/nomad-edge/nomad/client": {"Config", "HostNetwork", "NodeResourcesConfig", "GCConfig"},
	structsPath:                          jobTypes,
	apiPath:                              jobTypes,
}

var jobTypes = []string{"Job", "TaskGroup", "Task", "UpdateStrategy", "MigrateStrategy", "ReschedulePolicy",
	"RestartPolicy", "EphemeralDisk", "DisconnectStrategy", "NetworkResource", "Port", "Resources", "LogConfig",
	"DispatchPayloadConfig", "PeriodicConfig", "ParameterizedJobConfig", "Constraint", "Affinity", "Spread", "SpreadTarget"}

// notActing are the packages whose reads do not act on a key: the job file
// parser, the CLI (which displays what it reads), and test support.
var notActing = []string{"jobspec", "command", "ui", "nomad/mock", "client/clienttest",
	"command/agent/agenttest", "scheduler/schedtest", "testutil", "e2e"}

// notActingFuncs are the functions (by name, or "Receiver." for every
// method of a receiver) whose reads only move a key from one place to
// another or check its value: parse, copy, merge, defaults, validation,
// the plan diff. A key read only there is stored and ignored.
var notActingFuncs = regexp.MustCompile(`^(Copy|copy\w*|clone\w*|Merge|merge\w*|Canonicalize|canonicali[sz]e\w*|` +
	`Validate|validate\w*|Diff|DefaultConfig|DevConfig|String|` +
	`configDecoder\..*|block\..*|differ\..*)$`)

// keysNotRead are the fields nothing acts on, on purpose, each with why.
// An entry that is read after all is reported too, so the list stays true.
var keysNotRead = map[string]string{
	"command/agent.Config.DisableUpdateCheck":        "accepted so upstream configs load; this agent never checks for updates, so it is always in effect",
	"command/agent.Config.DisableAnonymousSignature": "as DisableUpdateCheck",
	"command/agent.ServerConfig.RaftProtocol":        "only 3 is accepted (upstream's only protocol since 1.4): parse and validation refuse any other by name",

	// Job-level reschedule and migrate are merged into each group by
	// api's TaskGroup.Canonicalize (defaults code, not counted above), as
	// upstream's client does: the servers' model has no job-level field.
	"api.Job.Reschedule": "merged into every group's policy by TaskGroup.Canonicalize, as upstream",
	"api.Job.Migrate":    "merged into every group's migrate block by TaskGroup.Canonicalize, as upstream",
	// Set by the servers in what they answer; ignored on registration, as
	// upstream (the CLI shows them).
	"api.Job.Status":            "server-set, ignored on registration",
	"api.Job.StatusDescription": "server-set, ignored on registration",
	"api.Job.Stable":            "server-set, ignored on registration",
	"api.Job.Version":           "server-set, ignored on registration",
	"api.Job.SubmitTime":        "server-set, ignored on registration",
	"api.Job.CreateIndex":       "server-set, ignored on registration",
	"api.Job.ModifyIndex":       "server-set, ignored on registration",
	"api.Job.JobModifyIndex":    "server-set, ignored on registration",

	"nomad/structs.Job.Update":                      "copied into each group without its own by TaskGroup.Canonicalize; the groups' copies are what deploys",
	"nomad/structs.MigrateStrategy.HealthCheck":     `"checks" and "task_states" are both judged on task states (there are no service checks); documented in job-specification.md`,
	"nomad/structs.MigrateStrategy.MinHealthyTime":  "only upstream's default is accepted: validation refuses any other value by name",
	"nomad/structs.MigrateStrategy.HealthyDeadline": "only upstream's default is accepted: validation refuses any other value by name",
	"nomad/structs.PeriodicConfig.SpecType":         "only cron is accepted: validation refuses any other spec type by name",
	"nomad/structs.Resources.DiskMB":                "refused on a task when set, in upstream's words: the disk is the group's ephemeral_disk",
	"nomad/structs.RestartPolicy.RenderTemplates":   "refused when true (a restart does not render templates again); false is what the official client sends",
}

// TestEveryKeyIsRead fails on a config or jobspec key that is accepted and
// stored but read by nothing that acts on it: "a key we accept is a key we
// honour". Such a key must be implemented, or refused by name where it is
// parsed, or (rarely) listed in keysNotRead with the reason.
func TestEveryKeyIsRead(t *testing.T) {
	pkgs := typedModule(t, moduleRoot(t))
	fields := keyFields(t, pkgs)
	read := actingReads(pkgs)

	var problems []string
	for _, f := range fields {
		_, allowed := keysNotRead[f]
		switch {
		case !read[f] && !allowed:
			problems = append(problems, fmt.Sprintf("%s is accepted but nothing acts on it: implement it, refuse it by name, or list it in keysNotRead with the reason", f))
		case read[f] && allowed:
			problems = append(problems, fmt.Sprintf("%s is read now: take it out of keysNotRead", f))
		}
	}
	for k := range keysNotRead {
		if !slices.Contains(fields, k) {
			problems = append(problems, fmt.Sprintf("keysNotRead names %s, which is no key field (renamed?)", k))
		}
	}
	slices.Sort(problems)
	if len(problems) > 0 {
		t.Fatalf("keys stored and ignored:\n%s", strings.Join(problems, "\n"))
	}
}

// keyFields lists the fields of keyTypes as "label.Type.Field" (label as
// the audit names packages: "command/agent", "api").
func keyFields(t *testing.T, pkgs []*typedPackage) []string {
	t.Helper()
	var out []string
	for _, p := range pkgs {
		names, ok := keyTypes[p.path]
		if !ok {
			continue
		}
		for _, name := range names {
			obj := p.pkg.Scope().Lookup(name)
			must.NotNil(t, obj, must.Sprintf("keyTypes names %s.%s, which does not exist", p.path, name))
			st, ok := obj.Type().Underlying().(*types.Struct)
			must.True(t, ok, must.Sprintf("%s.%s is not a struct", p.path, name))
			for i := range st.NumFields() {
				if f := st.Field(i); f.Exported() && !f.Embedded() {
					out = append(out, p.label+"."+name+"."+f.Name())
				}
			}
		}
	}
	must.SliceNotEmpty(t, out, must.Sprint("no key fields found: the walk is broken"))
	slices.Sort(out)
	return out
}

// actingReads returns the key fields read ("label.Type.Field") somewhere
// that acts on them: a field selection that is not the target of an
// assignment, outside notActing packages and notActingFuncs.
func actingReads(pkgs []*typedPackage) map[string]bool {
	labels := map[string]string{} // import path → label
	for _, p := range pkgs {
		labels[p.path] = p.label
	}
	read := map[string]bool{}
	for _, p := range pkgs {
		if isNotActing(p.label) {
			continue
		}
		for _, f := range p.files {
			for _, decl := range f.Decls {
				for name, node := range declNames(decl) {
					if notActingFuncs.MatchString(methodOf(name)) || notActingFuncs.MatchString(recvOf(name)+".") {
						continue
					}
					for _, key := range fieldReads(node, p.info, labels) {
						read[key] = true
					}
				}
			}
		}
	}
	return read
}

func isNotActing(label string) bool {
	for _, n := range notActing {
		if label == n || strings.HasPrefix(label, n+"/") && n != "command" {
			return true
		}
	}
	return false
}

// methodOf is "Method" of "Type.Method", the name of a function.
func methodOf(name string) string {
	return name[strings.LastIndexByte(name, '.')+1:]
}

// recvOf is "Type" of "Type.Method", "" for a function.
func recvOf(name string) string {
	if i := strings.IndexByte(name, '.'); i >= 0 {
		return name[:i]
	}
	return ""
}

// fieldReads returns the fields node reads, as "label.Type.Field". The
// outermost selector of an assignment's left side is written, not read
// (a.B.C = x reads a.B and writes C), and so is one whose address is
// taken (a flag or a decoder fills it).
func fieldReads(node ast.Node, info *types.Info, labels map[string]string) []string {
	written := map[*ast.SelectorExpr]bool{}
	ast.Inspect(node, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.AssignStmt:
			if x.Tok == token.ASSIGN || x.Tok == token.DEFINE {
				for _, lhs := range x.Lhs {
					if sel, ok := ast.Unparen(lhs).(*ast.SelectorExpr); ok {
						written[sel] = true
					}
				}
			}
		case *ast.IncDecStmt:
			if sel, ok := ast.Unparen(x.X).(*ast.SelectorExpr); ok {
				written[sel] = true
			}
		case *ast.UnaryExpr:
			// &c.F hands the field to a flag or decoder to fill.
			if sel, ok := ast.Unparen(x.X).(*ast.SelectorExpr); ok && x.Op == token.AND {
				written[sel] = true
			}
		}
		return true
	})
	var out []string
	ast.Inspect(node, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || written[sel] {
			return true
		}
		s := info.Selections[sel]
		if s == nil || s.Kind() != types.FieldVal {
			return true
		}
		owner := fieldOwner(s)
		if owner == nil || owner.Obj().Pkg() == nil {
			return true
		}
		label, ok := labels[owner.Obj().Pkg().Path()]
		if !ok {
			return true
		}
		out = append(out, label+"."+owner.Obj().Name()+"."+s.Obj().Name())
		return true
	})
	return out
}

// fieldOwner is the named struct that declares the selected field, through
// embedded fields.
func fieldOwner(s *types.Selection) *types.Named {
	t := s.Recv()
	idx := s.Index()
	for _, i := range idx[:len(idx)-1] {
		named := namedOf(t)
		if named == nil {
			return nil
		}
		st, ok := named.Underlying().(*types.Struct)
		if !ok {
			return nil
		}
		t = st.Field(i).Type()
	}
	return namedOf(t)
}
