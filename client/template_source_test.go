package client

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/client/template"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// staleServer answers Variables.Read as a follower LastContact behind
// the leader when the read allows stale answers, and records what it was
// asked.
type staleServer struct {
	mu   sync.Mutex
	lag  time.Duration
	seen []structs.QueryOptions
}

func (s *staleServer) RPC(_ string, args, reply any) error {
	q := args.(*structs.VariablesReadRequest).QueryOptions
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, q)
	r := reply.(*structs.VariablesReadResponse)
	r.Index = 7
	if q.AllowStale {
		r.LastContact = s.lag
	}
	return nil
}

// TestTemplateSource_ClientSettings checks that the client's template
// block reaches the reads: block_query_wait is a blocking query's
// MaxQueryTime, an answer staler than max_stale is asked again of the
// leader, and max_stale = 0 reads from the leader only.
func TestTemplateSource_ClientSettings(t *testing.T) {
	srv := &staleServer{lag: 30 * time.Second}
	cfg := template.DefaultClientConfig()
	cfg.MaxStale, cfg.BlockQueryWait = 10*time.Second, 42*time.Second
	c := &Client{cfg: Config{RPCHandler: srv, Template: &cfg}, ctx: context.Background()}
	src := templateSources{c}.Source("default", func() string { return "jwt" })

	_, _, err := src.Var(context.Background(), "nomad/jobs/app", 3)
	must.NoError(t, err)
	must.Len(t, 2, srv.seen, must.Sprint("a stale answer is asked again"))
	must.True(t, srv.seen[0].AllowStale)
	must.Eq(t, 42*time.Second, srv.seen[0].MaxQueryTime)
	must.False(t, srv.seen[1].AllowStale)

	srv.seen, srv.lag = nil, time.Second
	_, _, err = src.Var(context.Background(), "nomad/jobs/app", 0)
	must.NoError(t, err)
	must.Len(t, 1, srv.seen, must.Sprint("fresh enough"))
	must.Eq(t, 0, srv.seen[0].MaxQueryTime, must.Sprint("a read that does not block"))

	cfg.MaxStale = 0
	srv.seen = nil
	_, _, err = src.Var(context.Background(), "nomad/jobs/app", 0)
	must.NoError(t, err)
	must.False(t, srv.seen[0].AllowStale)
}
