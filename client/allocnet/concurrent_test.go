package allocnet_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/allocnet"
	"github.com/nomad-edge/nomad/client/allocnet/allocnettest"
)

// TestManager_ConcurrentSetups checks that allocations starting at once on
// a bridge that does not exist yet all get their network, and all go away:
// a client restoring or placing many allocations starts them together.
func TestManager_ConcurrentSetups(t *testing.T) {
	env := allocnettest.New(t)
	m := env.Manager(t)
	ctx := context.Background()
	const n = 6
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		ids[i] = fmt.Sprintf("99999999-0000-4000-8000-%012d", i)
		wg.Go(func() {
			_, errs[i] = m.Setup(ctx, allocnet.SetupInput{AllocID: ids[i], Ports: []allocnet.PortMapping{{Label: "http", HostPort: 46000 + i, ContainerPort: 8080}}})
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, id := range ids {
			_ = m.Teardown(ctx, id)
		}
	})
	for i := range n {
		must.NoError(t, errs[i])
	}
	must.Len(t, n, env.BridgePorts(t))
	for i, id := range ids {
		wg.Go(func() { errs[i] = m.Teardown(ctx, id) })
	}
	wg.Wait()
	for i := range n {
		must.NoError(t, errs[i])
	}
	for _, id := range ids {
		must.SliceEmpty(t, env.Leftovers(t, id))
	}
	must.SliceEmpty(t, env.BridgePorts(t))
}
