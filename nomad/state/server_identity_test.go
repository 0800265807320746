package state

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// The first servers' identity written stays: a second leader's write
// (two leaders racing on a new cluster) must not change the secret the
// other servers already prove themselves with.
func TestServerIdentity_FirstWriteWins(t *testing.T) {
	s := testStateStore(t)
	id, err := s.ServerIdentity(nil)
	must.NoError(t, err)
	must.Nil(t, id)

	wrote, err := s.SetServerIdentity(10, &structs.ServerIdentity{Secret: []byte("first")})
	must.NoError(t, err)
	must.True(t, wrote)
	wrote, err = s.SetServerIdentity(11, &structs.ServerIdentity{Secret: []byte("second")})
	must.NoError(t, err)
	must.False(t, wrote)

	id, err = s.ServerIdentity(nil)
	must.NoError(t, err)
	must.Eq(t, "first", string(id.Secret))
	must.Eq(t, 10, id.CreateIndex)

	_, err = s.SetServerIdentity(12, &structs.ServerIdentity{})
	must.ErrorIs(t, err, structs.ErrInvalidRequest)
}
