package structs_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestWorkloadIdentity_Validate checks that a job submitted as JSON with
// identity fields nothing honours (a named identity, aud) is refused
// naming each field, as the job file parser refuses them, as are a ttl
// below the minimum, a change_mode that does not exist, a signal mode
// without its signal and a signal without its mode; env, file, ttl and
// the change modes pass.
func TestWorkloadIdentity_Validate(t *testing.T) {
	j := mock.Job()
	for _, w := range []*structs.WorkloadIdentity{
		{Name: "default", Env: true, File: true, ChangeMode: "noop"},
		{Env: true, TTL: 2 * time.Hour, ChangeMode: "restart"},
		{File: true, ChangeMode: "signal", ChangeSignal: "SIGHUP"},
	} {
		j.TaskGroups[0].Tasks[0].Identity = w
		must.NoError(t, j.Validate(), must.Sprintf("%+v", w))
	}
	must.Eq(t, structs.DefaultWorkloadIdentityTTL, (&structs.WorkloadIdentity{}).IdentityTTL())
	must.Eq(t, 2*time.Hour, (&structs.WorkloadIdentity{TTL: 2 * time.Hour}).IdentityTTL())

	for _, tc := range []struct {
		w    *structs.WorkloadIdentity
		want []string
	}{
		{&structs.WorkloadIdentity{Name: "vault", Audience: []string{"x"}, TTL: time.Second, ChangeMode: "reload"},
			[]string{`Identity name "vault"`, "Identity aud", "Identity ttl 1s is invalid: must be at least 1m0s", `Identity change_mode "reload" is invalid`}},
		{&structs.WorkloadIdentity{ChangeMode: "signal"}, []string{`Identity change_mode "signal" must have a change_signal`}},
		{&structs.WorkloadIdentity{ChangeMode: "restart", ChangeSignal: "SIGHUP"}, []string{`Identity change_signal is only for change_mode "signal"`}},
	} {
		j.TaskGroups[0].Tasks[0].Identity = tc.w
		err := j.Validate()
		for _, want := range tc.want {
			must.ErrorContains(t, err, want)
		}
	}
}
