package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nomad-edge/nomad/api"
)

// diffMarker is the prefix upstream's CLI gives a change.
func diffMarker(typ string) string {
	switch typ {
	case "Added":
		return "+"
	case "Deleted":
		return "-"
	case "Edited":
		return "+/-"
	}
	return ""
}

// diffPrinter renders a job diff the way `nomad job plan` and `nomad job
// history -p` show it. Unchanged fields of the job, its groups and tasks
// appear only when verbose.
type diffPrinter struct {
	b       strings.Builder
	verbose bool
}

func (p *diffPrinter) line(indent int, format string, args ...any) {
	p.b.WriteString(strings.Repeat(" ", indent))
	fmt.Fprintf(&p.b, format, args...)
	p.b.WriteString("\n")
}

// marked is a change's marker followed by a space, or the space an
// unchanged line takes so that names stay aligned.
func marked(typ string) string {
	if m := diffMarker(typ); m != "" {
		return m + " "
	}
	return ""
}

func formatJobDiff(d *api.JobDiff, verbose bool) string {
	if d == nil {
		return ""
	}
	p := &diffPrinter{verbose: verbose}
	p.line(0, "%sJob: %q", marked(d.Type), d.ID)
	p.fields(2, d.Fields)
	p.objects(2, d.Objects)
	for _, g := range d.TaskGroups {
		p.group(g)
	}
	return strings.TrimRight(p.b.String(), "\n")
}

func (p *diffPrinter) group(g *api.TaskGroupDiff) {
	if g.Type == "None" && !p.verbose && len(g.Updates) == 0 {
		return
	}
	p.line(0, "%sTask Group: %q%s", marked(g.Type), g.Name, formatUpdates(g.Updates))
	p.fields(2, g.Fields)
	p.objects(2, g.Objects)
	for _, t := range g.Tasks {
		if t.Type == "None" && !p.verbose {
			continue
		}
		note := ""
		if len(t.Annotations) > 0 {
			note = " (" + strings.Join(t.Annotations, ", ") + ")"
		}
		p.line(2, "%sTask: %q%s", marked(t.Type), t.Name, note)
		p.fields(4, t.Fields)
		p.objects(4, t.Objects)
	}
}

// formatUpdates is a group's plan counts, "(1 create, 2 ignore)", in
// upstream's order of kinds.
func formatUpdates(u map[string]uint64) string {
	if len(u) == 0 {
		return ""
	}
	order := []string{"create", "destroy", "migrate", "canary", "in-place update", "create/destroy update", "ignore"}
	var parts []string
	for _, k := range order {
		if n := u[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(u)) {
		if !slices.Contains(order, k) && u[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", u[k], k))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func (p *diffPrinter) fields(indent int, fields []*api.FieldDiff) {
	p.fieldsOf(indent, fields, p.verbose)
}

// fieldsOf prints fields; unchanged ones only when all is set. Inside an
// object every field the servers sent is printed, as upstream's CLI does:
// they send unchanged fields with -verbose, and always inside a changed
// service or check so that one can tell which it is.
func (p *diffPrinter) fieldsOf(indent int, fields []*api.FieldDiff, all bool) {
	for _, f := range fields {
		note := ""
		if len(f.Annotations) > 0 {
			note = " (" + strings.Join(f.Annotations, ", ") + ")"
		}
		switch f.Type {
		case "Edited":
			p.line(indent, "+/- %s: %q => %q%s", f.Name, f.Old, f.New, note)
		case "Added":
			p.line(indent, "+ %s: %q%s", f.Name, f.New, note)
		case "Deleted":
			p.line(indent, "- %s: %q%s", f.Name, f.Old, note)
		default:
			if all {
				p.line(indent, "  %s: %q%s", f.Name, f.New, note)
			}
		}
	}
}

func (p *diffPrinter) objects(indent int, objects []*api.ObjectDiff) {
	for _, o := range objects {
		p.line(indent, "%s%s {", marked(o.Type), o.Name)
		p.fieldsOf(indent+2, o.Fields, true)
		p.objects(indent+2, o.Objects)
		p.line(indent, "}")
	}
}
