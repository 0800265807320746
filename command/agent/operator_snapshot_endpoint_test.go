package agent_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	nomadapi "github.com/hashicorp/nomad/api"
	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/command/agent/agenttest"
	"github.com/nomad-edge/nomad/helper/snapshot"
)

// The official client saves a snapshot (checking our Digest header against
// the body) and restores it, as upstream's CLI does against these agents;
// the answer carries upstream's content type, and a body that is no
// archive is a 400 before anything is restored.
func TestHTTP_OfficialClientSnapshot(t *testing.T) {
	a := agenttest.NewDevAgent(t, nil)
	c := officialClient(t, a)
	rc, err := c.Operator().Snapshot(nil)
	must.NoError(t, err)
	body, err := io.ReadAll(rc)
	must.NoError(t, err)
	must.NoError(t, rc.Close())
	arc, err := snapshot.Read(bytes.NewReader(body), t.TempDir())
	must.NoError(t, err)
	must.Positive(t, arc.Meta.Index)
	must.NoError(t, arc.Close())

	resp, err := http.Get(a.HTTPAddr + "/v1/operator/snapshot?stale")
	must.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	must.EqOp(t, http.StatusOK, resp.StatusCode)
	must.EqOp(t, "application/x-gzip", resp.Header.Get("Content-Type"))
	must.StrHasPrefix(t, "sha-256=", resp.Header.Get("Digest"))

	_, err = c.Operator().SnapshotRestore(bytes.NewReader(body), &nomadapi.WriteOptions{})
	must.NoError(t, err)

	req, err := http.NewRequest(http.MethodPut, a.HTTPAddr+"/v1/operator/snapshot", strings.NewReader("not an archive"))
	must.NoError(t, err)
	resp, err = http.DefaultClient.Do(req)
	must.NoError(t, err)
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	must.EqOp(t, http.StatusBadRequest, resp.StatusCode)
	must.StrContains(t, string(msg), "snapshot file is corrupt or truncated")
}
