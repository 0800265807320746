package structs_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// serviceJob is a valid job with a group service on a labelled port and an
// http check, the shape most job files have.
func serviceJob() *structs.Job {
	job := mock.Job()
	tg := job.TaskGroups[0]
	tg.Networks = []*structs.NetworkResource{{DynamicPorts: []structs.Port{{Label: "http"}}}}
	tg.Services = []*structs.Service{{
		Name:      "web",
		PortLabel: "http",
		Checks: []*structs.ServiceCheck{{
			Type: structs.ServiceCheckHTTP, Path: "/", Interval: 10 * time.Second, Timeout: 2 * time.Second,
		}},
	}}
	job.Canonicalize()
	return job
}

// TestService_ValidDefaults checks that a plain service validates and is
// canonicalized with provider "nomad", so JSON jobs need not say it.
func TestService_ValidDefaults(t *testing.T) {
	job := serviceJob()
	must.NoError(t, job.Validate())
	s := job.TaskGroups[0].Services[0]
	must.Eq(t, structs.ServiceProviderNomad, s.Provider)
	must.Eq(t, structs.AddressModeAuto, s.AddressMode)
	must.Eq(t, structs.OnUpdateRequireHealthy, s.Checks[0].OnUpdate)
}

// TestService_Validate checks that each bad service or check value is
// refused with the field it names, since a job with a dead check would
// otherwise deploy and never turn healthy.
func TestService_Validate(t *testing.T) {
	cases := []struct {
		name string
		edit func(*structs.TaskGroup)
		want string
	}{
		{"consul", func(tg *structs.TaskGroup) { tg.Services[0].Provider = "consul" }, `provider "consul" is not supported`},
		{"bad name", func(tg *structs.TaskGroup) { tg.Services[0].Name = "no_underscores" }, "name must be a DNS label"},
		{"unknown port", func(tg *structs.TaskGroup) { tg.Services[0].PortLabel = "admin" }, `port "admin" is not a port label`},
		{"driver mode", func(tg *structs.TaskGroup) { tg.Services[0].AddressMode = "driver" }, `address_mode "driver" is not supported`},
		{"no path", func(tg *structs.TaskGroup) { tg.Services[0].Checks[0].Path = "" }, "path is required"},
		{"short interval", func(tg *structs.TaskGroup) { tg.Services[0].Checks[0].Interval = time.Millisecond }, "interval (1ms) must be at least 1s"},
		{"grpc", func(tg *structs.TaskGroup) { tg.Services[0].Checks[0].Type = "grpc" }, `type "grpc" is not supported`},
		{"expose", func(tg *structs.TaskGroup) { tg.Services[0].Checks[0].Expose = true }, "expose is not supported"},
		{"status", func(tg *structs.TaskGroup) { tg.Services[0].Checks[0].InitialStatus = "ok" }, "initial_status must be one of"},
		{"on_update", func(tg *structs.TaskGroup) { tg.Services[0].OnUpdate = "never" }, "on_update must be one of"},
		{"task", func(tg *structs.TaskGroup) { tg.Services[0].TaskName = "nope" }, `task "nope" is not a task of the group`},
		{"script without task", func(tg *structs.TaskGroup) {
			tg.Services[0].Checks[0] = &structs.ServiceCheck{Type: "script", Command: "x", Interval: time.Second, Timeout: time.Second}
		}, "needs task"},
		{"duplicate", func(tg *structs.TaskGroup) { tg.Services = append(tg.Services, tg.Services[0].Copy()) }, `Service "web" with port "http" is defined twice`},
		{"task service with task", func(tg *structs.TaskGroup) {
			tg.Tasks[0].Services = []*structs.Service{{Name: "x", TaskName: "web"}}
		}, "Task web: Service \"x\": task cannot be set on a task's service"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			job := serviceJob()
			tc.edit(job.TaskGroups[0])
			err := job.Validate()
			must.Error(t, err)
			must.StrContains(t, err.Error(), tc.want)
		})
	}
}

// TestService_Copy checks that a copied service shares no slice or map
// with the original: state store objects are copied before they change.
func TestService_Copy(t *testing.T) {
	s := serviceJob().TaskGroups[0].Services[0]
	s.Tags = []string{"a"}
	s.Meta = map[string]string{"k": "v"}
	s.Checks[0].Header = map[string][]string{"H": {"1"}}
	s.Checks[0].CheckRestart = &structs.CheckRestart{Limit: 1}
	c := s.Copy()
	c.Tags[0] = "b"
	c.Meta["k"] = "w"
	c.Checks[0].Header["H"][0] = "2"
	c.Checks[0].CheckRestart.Limit = 2
	must.Eq(t, "a", s.Tags[0])
	must.Eq(t, "v", s.Meta["k"])
	must.Eq(t, "1", s.Checks[0].Header["H"][0])
	must.Eq(t, 1, s.Checks[0].CheckRestart.Limit)
}
