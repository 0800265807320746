package nomad

import (
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/mock"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// deploymentWrite calls one of the deployment changes an operator makes
// on the deployment id with the given token.
type deploymentWrite struct {
	name string
	call func(s *Server, id, token string) error
}

var deploymentWrites = []deploymentWrite{
	{"promote", func(s *Server, id, token string) error {
		return s.RPC("Deployment.Promote", &structs.DeploymentPromoteRequest{DeploymentID: id, All: true,
			WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.DeploymentUpdateResponse{})
	}},
	{"pause", func(s *Server, id, token string) error {
		return s.RPC("Deployment.Pause", &structs.DeploymentPauseRequest{DeploymentID: id, Pause: true,
			WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.DeploymentUpdateResponse{})
	}},
	{"fail", func(s *Server, id, token string) error {
		return s.RPC("Deployment.Fail", &structs.DeploymentFailRequest{DeploymentID: id,
			WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.DeploymentUpdateResponse{})
	}},
	{"set health of allocations for a", func(s *Server, id, token string) error {
		return s.RPC("Deployment.SetAllocHealth", &structs.DeploymentAllocHealthRequest{DeploymentID: id,
			HealthyAllocationIDs: []string{"a"}, WriteRequest: structs.WriteRequest{AuthToken: token}}, &structs.DeploymentUpdateResponse{})
	}},
}

// Every change of a deployment is refused the same way before anything
// is written: no ID, an unknown ID, a token that may not submit jobs in
// the deployment's namespace, and a deployment already finished, each
// with an error the CLI shows as it is.
func TestDeployment_ChangesRefusedAlike(t *testing.T) {
	s, mgmt := aclServer(t)
	reader := clientToken(t, s, mgmt, `namespace "default" { policy = "read" }`)
	job := mock.Job()
	must.NoError(t, s.State().UpsertJob(100, 1, job))
	dep := structs.NewDeployment(job, 50, time.Unix(100, 0))
	dep.Status = structs.DeploymentStatusSuccessful
	must.NoError(t, s.State().UpsertDeployment(101, dep))
	before, err := s.State().LatestIndex()
	must.NoError(t, err)

	for _, w := range deploymentWrites {
		t.Run(w.name, func(t *testing.T) {
			must.ErrorIs(t, w.call(s, "", mgmt.SecretID), structs.ErrMissingField)
			must.ErrorIs(t, w.call(s, "no-such-deployment", mgmt.SecretID), structs.ErrUnknownDeployment)
			must.ErrorIs(t, w.call(s, dep.ID, reader.SecretID), structs.ErrPermissionDenied)
			err := w.call(s, dep.ID, mgmt.SecretID)
			must.ErrorIs(t, err, structs.ErrInvalidRequest)
			must.ErrorContains(t, err, "can't "+w.name+" terminal deployment")
		})
	}
	after, err := s.State().LatestIndex()
	must.NoError(t, err)
	must.Eq(t, before, after, must.Sprint("a refused change writes nothing"))
}
