package nomad

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// ACLs across federated regions, as upstream: one region is authoritative
// (`server { authoritative_region }`). Policies and global tokens are
// written there only: a write of them made in another region is sent to
// the authoritative one (aclWriteRegion). The leader of every other
// region copies them into its own raft (the acl_replication duty) with
// the replication token (`acl { replication_token }`, a management token
// of the authoritative region), so a global token works in every region,
// also while its region is cut off from the authoritative one. Local
// tokens stay in the region that made them.

// aclReplicationWait bounds each blocking read of the authoritative
// region; aclReplicationBackoff is the wait after a failed round, doubled
// up to aclReplicationMaxBackoff.
const (
	aclReplicationWait       = 5 * time.Minute
	aclReplicationBackoff    = time.Second
	aclReplicationMaxBackoff = 30 * time.Second
)

// ErrMixedTokenScope refuses a token write that mixes global and local
// tokens in a region that is not authoritative: the two go to different
// regions.
var ErrMixedTokenScope = fmt.Errorf("%w: global and local tokens cannot be written in one request outside the authoritative region", structs.ErrInvalidRequest)

// replicatesACLs reports whether this server's region copies its ACLs
// from another.
func (s *Server) replicatesACLs() bool {
	a := s.config.AuthoritativeRegion
	return s.config.ACLEnabled && a != "" && a != s.config.Region
}

// aclWriteRegion points a write of policies or global tokens at the
// authoritative region when this region only replicates them.
func (s *Server) aclWriteRegion(w *structs.WriteRequest) {
	if s.replicatesACLs() {
		w.Region = s.config.AuthoritativeRegion
	}
}

// tokenWriteRegion is aclWriteRegion for a write of tokens: global ones go
// to the authoritative region, local ones stay.
func (s *Server) tokenWriteRegion(w *structs.WriteRequest, global []bool) error {
	if !s.replicatesACLs() || len(global) == 0 {
		return nil
	}
	first := global[0]
	for _, g := range global[1:] {
		if g != first {
			return ErrMixedTokenScope
		}
	}
	if first {
		w.Region = s.config.AuthoritativeRegion
	}
	return nil
}

// tokenDeleteRegion is tokenWriteRegion for a delete, which names tokens
// by accessor: their scope is read from this region's copy (a token it
// does not hold is taken for local, and the delete stays here).
func (s *Server) tokenDeleteRegion(args *structs.ACLTokenDeleteRequest) error {
	if !s.replicatesACLs() || args.Region != "" && args.Region != s.config.Region {
		return nil
	}
	global := make([]bool, 0, len(args.AccessorIDs))
	for _, id := range args.AccessorIDs {
		t, err := s.State().ACLTokenByAccessorID(nil, id)
		if err != nil {
			return err
		}
		global = append(global, t != nil && t.Global)
	}
	return s.tokenWriteRegion(&args.WriteRequest, global)
}

// replicateACLs is the leader duty of a region that replicates: it copies
// the authoritative region's policies and global tokens until stop closes.
func (s *Server) replicateACLs(stop <-chan struct{}) {
	if !s.replicatesACLs() {
		return
	}
	if s.config.ReplicationToken == "" {
		s.logger.Error("ACLs are not replicated: acl.replication_token is not set", "authoritative_region", s.config.AuthoritativeRegion)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
		case <-s.shutdownCh:
		}
		cancel()
	}()
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.replicationLoop(ctx, stop, "policies", s.replicatePolicies)
	}()
	s.replicationLoop(ctx, stop, "tokens", s.replicateTokens)
	<-done
}

// replicationLoop runs round, each time with the index the last one
// reached, backing off after failures, until stop closes.
func (s *Server) replicationLoop(ctx context.Context, stop <-chan struct{}, what string, round func(ctx context.Context, index uint64) (uint64, error)) {
	var index uint64
	backoff := aclReplicationBackoff
	failing := false
	for ctx.Err() == nil {
		next, err := round(ctx, index)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			if !failing {
				s.logger.Error("ACL replication from the authoritative region failed", "kind", what, "authoritative_region", s.config.AuthoritativeRegion, "error", err)
			}
			failing = true
			if !s.waitOrStop(stop, backoff) {
				return
			}
			backoff = min(2*backoff, aclReplicationMaxBackoff)
			continue
		}
		if failing {
			s.logger.Info("ACL replication from the authoritative region resumed", "kind", what)
		}
		failing, backoff = false, aclReplicationBackoff
		if next < index {
			next = 0 // the authoritative region's state was restored: read it whole
		}
		index = next
	}
}

// authoritativeQuery is the query options of a read of the authoritative
// region that blocks past index.
func (s *Server) authoritativeQuery(ctx context.Context, index uint64) structs.QueryOptions {
	q := structs.QueryOptions{
		Region: s.config.AuthoritativeRegion, AuthToken: s.config.ReplicationToken,
		MinQueryIndex: index, MaxQueryTime: aclReplicationWait, AllowStale: true,
	}
	q.SetContext(ctx)
	return q
}

// replicatePolicies makes the local policies those of the authoritative
// region once its list passes index, and returns the list's index.
func (s *Server) replicatePolicies(ctx context.Context, index uint64) (uint64, error) {
	list := &structs.ACLPolicyListRequest{QueryOptions: s.authoritativeQuery(ctx, index)}
	var listed structs.ACLPolicyListResponse
	if err := s.RPC("ACL.ListPolicies", list, &listed); err != nil {
		return 0, err
	}
	st := s.State()
	var upsert []*structs.ACLPolicy
	want := map[string]bool{}
	for _, stub := range listed.Policies {
		want[stub.Name] = true
		get := &structs.ACLPolicySpecificRequest{Name: stub.Name, QueryOptions: s.authoritativeQuery(ctx, 0)}
		var got structs.ACLPolicySingleResponse
		if err := s.RPC("ACL.GetPolicy", get, &got); err != nil {
			return 0, err
		}
		if got.Policy == nil {
			continue // deleted since the list: the next round sees it gone
		}
		local, err := st.ACLPolicyByName(nil, stub.Name)
		if err != nil {
			return 0, err
		}
		if local == nil || !samePolicy(local, got.Policy) {
			p := *got.Policy
			p.CreateIndex, p.ModifyIndex = 0, 0
			upsert = append(upsert, &p)
		}
	}
	var gone []string
	iter, err := st.ACLPolicies(nil)
	if err != nil {
		return 0, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if p := raw.(*structs.ACLPolicy); !want[p.Name] {
			gone = append(gone, p.Name)
		}
	}
	if len(upsert) > 0 {
		if _, _, err := s.raftApply(structs.ACLPolicyUpsertRequestType, &structs.ACLPolicyUpsertRequest{Policies: upsert}); err != nil {
			return 0, err
		}
	}
	if len(gone) > 0 {
		if _, _, err := s.raftApply(structs.ACLPolicyDeleteRequestType, &structs.ACLPolicyDeleteRequest{Names: gone}); err != nil {
			return 0, err
		}
	}
	if len(upsert)+len(gone) > 0 {
		s.logger.Info("replicated ACL policies", "upserted", len(upsert), "deleted", len(gone))
	}
	return listed.Index, nil
}

func samePolicy(a, b *structs.ACLPolicy) bool {
	return a.Name == b.Name && a.Description == b.Description && a.Rules == b.Rules && reflect.DeepEqual(a.JobACL, b.JobACL)
}

// replicateTokens makes the local global tokens those of the authoritative
// region once its list passes index, and returns the list's index. A
// token's secret never changes, so a token is read again only when what
// its list entry shows changed.
func (s *Server) replicateTokens(ctx context.Context, index uint64) (uint64, error) {
	list := &structs.ACLTokenListRequest{QueryOptions: s.authoritativeQuery(ctx, index)}
	var listed structs.ACLTokenListResponse
	if err := s.RPC("ACL.ListTokens", list, &listed); err != nil {
		return 0, err
	}
	st := s.State()
	var upsert []*structs.ACLToken
	want := map[string]bool{}
	for _, stub := range listed.Tokens {
		if !stub.Global {
			continue
		}
		want[stub.AccessorID] = true
		local, err := st.ACLTokenByAccessorID(nil, stub.AccessorID)
		if err != nil {
			return 0, err
		}
		if local != nil && sameTokenStub(local.Stub(), stub) {
			continue
		}
		get := &structs.ACLTokenSpecificRequest{AccessorID: stub.AccessorID, QueryOptions: s.authoritativeQuery(ctx, 0)}
		var got structs.ACLTokenSingleResponse
		if err := s.RPC("ACL.GetToken", get, &got); err != nil {
			return 0, err
		}
		if got.Token == nil {
			continue
		}
		t := *got.Token
		t.CreateIndex, t.ModifyIndex = 0, 0
		upsert = append(upsert, &t)
	}
	var gone []string
	iter, err := st.ACLTokens(nil)
	if err != nil {
		return 0, err
	}
	for raw := iter.Next(); raw != nil; raw = iter.Next() {
		if t := raw.(*structs.ACLToken); t.Global && !want[t.AccessorID] {
			gone = append(gone, t.AccessorID)
		}
	}
	if len(upsert) > 0 {
		if _, _, err := s.raftApply(structs.ACLTokenUpsertRequestType, &structs.ACLTokenUpsertRequest{Tokens: upsert}); err != nil {
			return 0, err
		}
	}
	if len(gone) > 0 {
		if _, _, err := s.raftApply(structs.ACLTokenDeleteRequestType, &structs.ACLTokenDeleteRequest{AccessorIDs: gone}); err != nil {
			return 0, err
		}
	}
	if len(upsert)+len(gone) > 0 {
		s.logger.Info("replicated global ACL tokens", "upserted", len(upsert), "deleted", len(gone))
	}
	return listed.Index, nil
}

func sameTokenStub(a, b *structs.ACLTokenListStub) bool {
	return a.AccessorID == b.AccessorID && a.Name == b.Name && a.Type == b.Type && a.Global == b.Global &&
		slices.Equal(a.Policies, b.Policies) && a.CreateTime.Equal(b.CreateTime) &&
		(a.ExpirationTime == nil) == (b.ExpirationTime == nil) && (a.ExpirationTime == nil || a.ExpirationTime.Equal(*b.ExpirationTime))
}
