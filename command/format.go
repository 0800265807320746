package command

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ryanuber/columnize"

	"github.com/nomad-edge/nomad/api"
)

// shortIDLength is how many characters of an ID the CLI shows unless
// -verbose is given.
const shortIDLength = 8

// fullIDLength is an ID's full length (a UUID).
const fullIDLength = 36

// timeFormat is how absolute times are shown, as upstream shows them.
const timeFormat = "2006-01-02T15:04:05Z07:00"

// formatMapKV renders a string map as formatKV's "key = value" lines,
// sorted by key.
func formatMapKV(m map[string]string) string {
	lines := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		lines = append(lines, k+"|"+m[k])
	}
	return formatKV(lines)
}

// formatKV lays out "key|value" lines as aligned "key = value" pairs; an
// empty value reads <none>.
func formatKV(lines []string) string {
	return columnize.Format(lines, &columnize.Config{Delim: "|", Glue: " = ", Empty: "<none>"})
}

// formatList lays out "a|b|c" lines as aligned columns, the first line
// being the header.
func formatList(lines []string) string {
	return columnize.Format(lines, &columnize.Config{Delim: "|", Glue: "  ", Empty: "<none>"})
}

// limit shortens s to at most n characters.
func limit(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// view is how detailed a command's output is: with -verbose, full IDs
// and absolute times; otherwise short IDs and times relative to now.
type view struct {
	verbose bool
	now     time.Time
}

// idLength is the length IDs are shown at.
func (v view) idLength() int {
	if v.verbose {
		return fullIDLength
	}
	return shortIDLength
}

// id shortens an ID for display.
func (v view) id(id string) string { return limit(id, v.idLength()) }

// age renders a Unix-nanoseconds stamp: absolute when verbose, else
// relative to now.
func (v view) age(nano int64) string {
	if nano == 0 {
		return ""
	}
	if v.verbose {
		return formatUnixNanoTime(nano)
	}
	return prettyTimeDiff(time.Unix(0, nano), v.now)
}

// at renders an instant: absolute when verbose, else relative to now.
func (v view) at(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	if v.verbose {
		return formatTime(t)
	}
	return prettyTimeDiff(t, v.now)
}

// formatTime renders t like upstream ("" for the zero time).
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(timeFormat)
}

// formatUnixNanoTime renders a Unix-nanoseconds stamp.
func formatUnixNanoTime(nano int64) string {
	if nano == 0 {
		return ""
	}
	return formatTime(time.Unix(0, nano))
}

// prettyTimeDiff renders the distance between then and now in its two
// largest units, rounded to the second: "3s ago", "1h5m ago", or "12s from
// now" for a future instant.
func prettyTimeDiff(then, now time.Time) string {
	if then.IsZero() {
		return ""
	}
	d := now.Sub(then).Round(time.Second)
	if d < 0 {
		return prettyDuration(-d) + " from now"
	}
	return prettyDuration(d) + " ago"
}

// prettyDuration renders d in its two largest units, rounded down to the
// second, with no gaps: "0s", "2m10s", "1h" rather than "1h0m" or "1h3s".
func prettyDuration(d time.Duration) string {
	if d < time.Second {
		return "0s"
	}
	units := []struct {
		name string
		size time.Duration
	}{
		{"y", 365 * 24 * time.Hour},
		{"mo", 30 * 24 * time.Hour},
		{"d", 24 * time.Hour},
		{"h", time.Hour},
		{"m", time.Minute},
		{"s", time.Second},
	}
	var parts []string
	for _, u := range units {
		if len(parts) == 2 {
			break
		}
		if n := d / u.size; n > 0 {
			parts = append(parts, fmt.Sprintf("%d%s", n, u.name))
			d -= n * u.size
		} else if len(parts) > 0 {
			break
		}
	}
	return strings.Join(parts, "")
}

// formatMB renders megabytes the way upstream's humanized sizes read.
func formatMB(mb int64) string {
	if mb < 0 {
		return fmt.Sprintf("%d MiB", mb)
	}
	return formatBytes(uint64(mb) << 20)
}

// allocRow is the part of an allocation the allocation tables show; list
// stubs and full allocations both become one.
type allocRow struct {
	ID, EvalID, NodeID, NodeName, TaskGroup string
	JobVersion                              uint64
	DesiredStatus, ClientStatus             string
	CreateTime, ModifyTime                  int64
}

func rowFromStub(a *api.AllocationListStub) allocRow {
	return allocRow{
		ID: a.ID, EvalID: a.EvalID, NodeID: a.NodeID, NodeName: a.NodeName, TaskGroup: a.TaskGroup,
		JobVersion: a.JobVersion, DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
}

func rowFromAlloc(a *api.Allocation) allocRow {
	r := allocRow{
		ID: a.ID, EvalID: a.EvalID, NodeID: a.NodeID, NodeName: a.NodeName, TaskGroup: a.TaskGroup,
		DesiredStatus: a.DesiredStatus, ClientStatus: a.ClientStatus,
		CreateTime: a.CreateTime, ModifyTime: a.ModifyTime,
	}
	if a.Job != nil && a.Job.Version != nil {
		r.JobVersion = *a.Job.Version
	}
	return r
}

// formatAllocRows renders the allocation table of `job status` and `node
// status` (and of an ambiguous alloc prefix).
func formatAllocRows(rows []allocRow, v view) string {
	if len(rows) == 0 {
		return "No allocations placed"
	}
	lines := make([]string, 0, len(rows)+1)
	if v.verbose {
		lines = append(lines, "ID|Eval ID|Node ID|Node Name|Task Group|Version|Desired|Status|Created|Modified")
	} else {
		lines = append(lines, "ID|Node ID|Task Group|Version|Desired|Status|Created|Modified")
	}
	for _, r := range rows {
		created, modified := v.age(r.CreateTime), v.age(r.ModifyTime)
		if v.verbose {
			lines = append(lines, fmt.Sprintf("%s|%s|%s|%s|%s|%d|%s|%s|%s|%s",
				v.id(r.ID), v.id(r.EvalID), v.id(r.NodeID), r.NodeName, r.TaskGroup,
				r.JobVersion, r.DesiredStatus, r.ClientStatus, created, modified))
		} else {
			lines = append(lines, fmt.Sprintf("%s|%s|%s|%d|%s|%s|%s|%s",
				v.id(r.ID), v.id(r.NodeID), r.TaskGroup,
				r.JobVersion, r.DesiredStatus, r.ClientStatus, created, modified))
		}
	}
	return formatList(lines)
}

// formatAllocMetrics explains a placement (or a failure to place) line by
// line, each line starting with prefix: which nodes were filtered out and
// by what, which ran out of which resource.
func formatAllocMetrics(m *api.AllocationMetric, prefix string) string {
	if m == nil {
		return ""
	}
	var b strings.Builder
	line := func(format string, args ...any) {
		b.WriteString(prefix)
		fmt.Fprintf(&b, format, args...)
		b.WriteString("\n")
	}
	if m.NodesEvaluated == 0 {
		line("* No nodes were eligible for evaluation")
	}
	for _, dc := range slices.Sorted(maps.Keys(m.NodesAvailable)) {
		if m.NodesAvailable[dc] == 0 {
			line("* No nodes are available in datacenter %q", dc)
		}
	}
	for _, class := range slices.Sorted(maps.Keys(m.ClassFiltered)) {
		line("* Class %q: %d nodes excluded by filter", class, m.ClassFiltered[class])
	}
	for _, c := range slices.Sorted(maps.Keys(m.ConstraintFiltered)) {
		line("* Constraint %q: %d nodes excluded by filter", c, m.ConstraintFiltered[c])
	}
	if m.NodesExhausted > 0 {
		line("* Resources exhausted on %d nodes", m.NodesExhausted)
	}
	for _, class := range slices.Sorted(maps.Keys(m.ClassExhausted)) {
		line("* Class %q exhausted on %d nodes", class, m.ClassExhausted[class])
	}
	for _, dim := range slices.Sorted(maps.Keys(m.DimensionExhausted)) {
		line("* Dimension %q exhausted on %d nodes", dim, m.DimensionExhausted[dim])
	}
	for _, q := range m.QuotaExhausted {
		line("* Quota limit hit %q", q)
	}
	return strings.TrimRight(b.String(), "\n")
}

// formatPlacementFailures explains every group of an evaluation that
// could not be placed, groups in name order: a heading starting with head,
// then the reasons, each starting with indent.
func formatPlacementFailures(failed map[string]*api.AllocationMetric, head, indent string) string {
	var b strings.Builder
	for i, group := range slices.Sorted(maps.Keys(failed)) {
		m := failed[group]
		if i > 0 {
			b.WriteString("\n")
		}
		n := 1
		if m != nil {
			n += m.CoalescedFailures
		}
		noun := "allocations"
		if n == 1 {
			noun = "allocation"
		}
		fmt.Fprintf(&b, "%sTask Group %q (failed to place %d %s):\n", head, group, n, noun)
		b.WriteString(formatAllocMetrics(m, indent))
	}
	return b.String()
}

// formatScores renders the recorded node scores of a placement: one row
// per candidate node, one column per scorer, then the final score.
func formatScores(m *api.AllocationMetric, length int) string {
	if m == nil || len(m.ScoreMetaData) == 0 {
		return ""
	}
	scorers := map[string]bool{}
	for _, s := range m.ScoreMetaData {
		for name := range s.Scores {
			scorers[name] = true
		}
	}
	names := slices.Sorted(maps.Keys(scorers))
	lines := []string{"Node|" + strings.Join(names, "|") + "|final score"}
	for _, s := range m.ScoreMetaData {
		row := []string{limit(s.NodeID, length)}
		for _, name := range names {
			row = append(row, fmt.Sprintf("%.3g", s.Scores[name]))
		}
		row = append(row, fmt.Sprintf("%.3g", s.NormScore))
		lines = append(lines, strings.Join(row, "|"))
	}
	return formatList(lines)
}

// userErrorf is fmt.Errorf for a message printed to the user as is, in
// upstream's form ("Error parsing ...: ..."), where a capital letter is
// the point.
func userErrorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
