package structs_test

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestWorkloadIdentity_Validate checks that a job submitted as JSON with
// identity fields nothing honours is refused naming each field, as the
// job file parser refuses them, while env and file pass.
func TestWorkloadIdentity_Validate(t *testing.T) {
	j := mock.Job()
	j.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{Name: "default", Env: true, File: true, ChangeMode: "noop"}
	must.NoError(t, j.Validate())

	j.TaskGroups[0].Tasks[0].Identity = &structs.WorkloadIdentity{
		Name: "vault", Audience: []string{"x"}, TTL: time.Hour, ChangeMode: "restart", ChangeSignal: "SIGHUP",
	}
	err := j.Validate()
	for _, want := range []string{"Identity name \"vault\"", "Identity aud", "Identity ttl", "Identity change_mode \"restart\"", "Identity change_signal"} {
		must.ErrorContains(t, err, want)
	}
}
