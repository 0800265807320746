package structs

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// renderObjects prints a diff's objects one line per object and field, the
// form the expectations below were written in from upstream 1.6.5's
// /v1/job/:id/plan answer for the same change.
func renderObjects(b *strings.Builder, indent int, fields []*FieldDiff, objects []*ObjectDiff) {
	pad := strings.Repeat(" ", indent)
	for _, f := range fields {
		fmt.Fprintf(b, "%sF %s %s %q %q\n", pad, f.Type, f.Name, f.Old, f.New)
	}
	for _, o := range objects {
		fmt.Fprintf(b, "%sO %s %s\n", pad, o.Type, o.Name)
		renderObjects(b, indent+2, o.Fields, o.Objects)
	}
}

// serviceDiffJob is a job with a group service carrying an http check and
// a second group service, as the upstream comparison used.
func serviceDiffJob() *Job {
	job := diffJob()
	tg := job.TaskGroups[0]
	tg.Services = []*Service{{
		Name: "api", PortLabel: "http", Provider: "nomad", AddressMode: "auto", OnUpdate: "require_healthy",
		Tags: []string{"a", "b"}, CanaryTags: []string{"c"}, Meta: map[string]string{"k": "v"},
		Checks: []*ServiceCheck{{
			Name: "hc", Type: "http", Path: "/health", Interval: 10 * time.Second, Timeout: 2 * time.Second,
			OnUpdate: "require_healthy", Header: map[string][]string{"X-A": {"1"}},
			CheckRestart: &CheckRestart{Limit: 3, Grace: time.Second},
		}},
	}, {Name: "gone", PortLabel: "http", Provider: "nomad", AddressMode: "auto", OnUpdate: "require_healthy"}}
	return job
}

// Editing a service shows it as one Edited "Service" object with every
// field listed (so the reader can tell which one), Tags and CanaryTags as
// sets and the check as an Edited "Check" with its Header and
// CheckRestart; a renamed service in the same place is an edit of Name.
// Field names, types and values are upstream's (the fields upstream has
// and we do not, such as EnableTagOverride or GRPCService, are absent).
func TestJobDiff_ServiceEdited(t *testing.T) {
	old, new := serviceDiffJob(), serviceDiffJob()
	s := new.TaskGroups[0].Services[0]
	s.Tags, s.CanaryTags, s.Meta = []string{"a", "d"}, []string{"c", "e"}, map[string]string{"k": "w"}
	s.Checks[0].Path, s.Checks[0].Header["X-A"], s.Checks[0].CheckRestart.Limit = "/ready", []string{"2"}, 5
	new.TaskGroups[0].Services[1].Name = "new"

	d, err := old.Diff(new, false)
	must.NoError(t, err)
	must.Eq(t, DiffTypeEdited, d.Type)
	must.Len(t, 1, d.TaskGroups)
	g := d.TaskGroups[0]
	must.Eq(t, DiffTypeEdited, g.Type)
	must.SliceEmpty(t, g.Tasks, must.Sprint("the task's own fields did not change"))
	var b strings.Builder
	renderObjects(&b, 0, g.Fields, g.Objects)
	must.Eq(t, `O Edited Service
  F None Address "" ""
  F None AddressMode "auto" "auto"
  F Edited Meta[k] "v" "w"
  F None Name "api" "api"
  F None OnUpdate "require_healthy" "require_healthy"
  F None PortLabel "http" "http"
  F None Provider "nomad" "nomad"
  F None TaskName "" ""
  O Added CanaryTags
    F None CanaryTags "c" "c"
    F Added CanaryTags "" "e"
  O Edited Tags
    F None Tags "a" "a"
    F Deleted Tags "b" ""
    F Added Tags "" "d"
  O Edited Check
    F None AddressMode "" ""
    F None Command "" ""
    F None Expose "false" "false"
    F None FailuresBeforeCritical "0" "0"
    F None InitialStatus "" ""
    F None Interval "10000000000" "10000000000"
    F None Method "" ""
    F None Name "hc" "hc"
    F None OnUpdate "require_healthy" "require_healthy"
    F Edited Path "/health" "/ready"
    F None PortLabel "" ""
    F None Protocol "" ""
    F None SuccessBeforePassing "0" "0"
    F None TLSSkipVerify "false" "false"
    F None TaskName "" ""
    F None Timeout "2000000000" "2000000000"
    F None Type "http" "http"
    O Edited CheckRestart
      F None Grace "1000000000" "1000000000"
      F None IgnoreWarnings "false" "false"
      F Edited Limit "3" "5"
    O Edited Header
      F Edited X-A[0] "1" "2"
O Edited Service
  F None Address "" ""
  F None AddressMode "auto" "auto"
  F Edited Name "gone" "new"
  F None OnUpdate "require_healthy" "require_healthy"
  F None PortLabel "http" "http"
  F None Provider "nomad" "nomad"
  F None TaskName "" ""
`, b.String())

	d, err = old.Diff(old.Copy(), false)
	must.NoError(t, err)
	must.Eq(t, DiffTypeNone, d.Type, must.Sprint("unchanged services are no change"))
	must.SliceEmpty(t, d.TaskGroups)
}

// Removing a check is a Deleted "Check" inside an otherwise unchanged
// (still listed, None) service; a new task service with a check is an
// Added "Service" whose unset fields are None and set ones Added, as
// upstream shows them.
func TestJobDiff_ServiceAndCheckAddedDeleted(t *testing.T) {
	old, new := serviceDiffJob(), serviceDiffJob()
	new.TaskGroups[0].Services[0].Checks = nil
	new.TaskGroups[0].Tasks[0].Services = []*Service{{
		Name: "extra", PortLabel: "http", Provider: "nomad", AddressMode: "auto", OnUpdate: "require_healthy", TaskName: "srv",
		Checks: []*ServiceCheck{{Name: "tcp", Type: "tcp", Interval: 5 * time.Second, Timeout: time.Second, OnUpdate: "require_healthy"}},
	}}

	d, err := old.Diff(new, false)
	must.NoError(t, err)
	g := d.TaskGroups[0]
	var b strings.Builder
	renderObjects(&b, 0, g.Fields, g.Objects)
	must.StrContains(t, b.String(), "O Edited Service\n  F None Address \"\" \"\"\n")
	must.StrContains(t, b.String(), "  F None Meta[k] \"v\" \"v\"\n")
	must.StrContains(t, b.String(), "  O None CanaryTags\n    F None CanaryTags \"c\" \"c\"\n")
	must.StrContains(t, b.String(), "  O Deleted Check\n    F None AddressMode \"\" \"\"\n")
	must.StrContains(t, b.String(), "    F Deleted Interval \"10000000000\" \"\"\n")
	must.StrContains(t, b.String(), "    O Deleted Header\n      F Deleted X-A[0] \"1\" \"\"\n")

	must.Len(t, 1, g.Tasks)
	must.Eq(t, DiffTypeEdited, g.Tasks[0].Type)
	b.Reset()
	renderObjects(&b, 0, g.Tasks[0].Fields, g.Tasks[0].Objects)
	must.Eq(t, `O Added Service
  F None Address "" ""
  F Added AddressMode "" "auto"
  F Added Name "" "extra"
  F Added OnUpdate "" "require_healthy"
  F Added PortLabel "" "http"
  F Added Provider "" "nomad"
  F Added TaskName "" "srv"
  O Added Check
    F None AddressMode "" ""
    F None Command "" ""
    F Added Expose "" "false"
    F Added FailuresBeforeCritical "" "0"
    F None InitialStatus "" ""
    F Added Interval "" "5000000000"
    F None Method "" ""
    F Added Name "" "tcp"
    F Added OnUpdate "" "require_healthy"
    F None Path "" ""
    F None PortLabel "" ""
    F None Protocol "" ""
    F Added SuccessBeforePassing "" "0"
    F Added TLSSkipVerify "" "false"
    F None TaskName "" ""
    F Added Timeout "" "1000000000"
    F Added Type "" "tcp"
`, b.String())
}
