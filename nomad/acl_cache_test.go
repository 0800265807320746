package nomad

import (
	"fmt"
	"testing"
	"time"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// aclStore is a state store holding policies and a client token with
// them, for resolving without a server.
func aclStore(t testing.TB, policies map[string]string) (*state.StateStore, *structs.ACLToken) {
	t.Helper()
	st, err := state.NewStateStore(nil)
	must.NoError(t, err)
	var ps []*structs.ACLPolicy
	var names []string
	for name, rules := range policies {
		ps = append(ps, &structs.ACLPolicy{Name: name, Rules: rules})
		names = append(names, name)
	}
	must.NoError(t, st.UpsertACLPolicies(5, ps))
	tok := &structs.ACLToken{AccessorID: "a", SecretID: "s", Type: structs.ACLClientToken, Policies: names}
	must.NoError(t, st.UpsertACLTokens(6, []*structs.ACLToken{tok}))
	return st, tok
}

// A token's policies are compiled once and reused, and an update of one
// of them takes effect on the very next request: a cache that served the
// old rules would keep a revoked permission alive.
func TestACLCache_UpdateInvalidates(t *testing.T) {
	st, tok := aclStore(t, map[string]string{"jobs": `namespace "default" { policy = "write" }`})
	cache := newACLCache(8)
	first, _, err := resolveToken(st, cache, tok.SecretID, time.Now())
	must.NoError(t, err)
	again, _, err := resolveToken(st, cache, tok.SecretID, time.Now())
	must.NoError(t, err)
	must.True(t, first == again, must.Sprint("the second resolve is served from the cache"))
	must.True(t, again.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob))

	must.NoError(t, st.UpsertACLPolicies(7, []*structs.ACLPolicy{{Name: "jobs", Rules: `namespace "default" { policy = "read" }`}}))
	after, _, err := resolveToken(st, cache, tok.SecretID, time.Now())
	must.NoError(t, err)
	must.False(t, after.AllowNamespaceOperation("default", acl.NamespaceCapabilitySubmitJob))

	must.NoError(t, st.DeleteACLPolicies(8, []string{"jobs"}))
	gone, _, err := resolveToken(st, cache, tok.SecretID, time.Now())
	must.NoError(t, err)
	must.False(t, gone.AllowNamespaceOperation("default", acl.NamespaceCapabilityReadJob))
}

// The cache holds at most its size, dropping the least recently used.
func TestACLCache_Bounded(t *testing.T) {
	cache := newACLCache(3)
	for i := range 10 {
		cache.put(fmt.Sprint(i), acl.NewACL(nil))
	}
	must.Eq(t, 3, cache.len())
	_, ok := cache.get("9")
	must.True(t, ok)
	_, ok = cache.get("0")
	must.False(t, ok)
}

// BenchmarkResolveToken measures what every request with a client token
// pays to learn its permissions, with and without the policy cache.
func BenchmarkResolveToken(b *testing.B) {
	st, tok := aclStore(b, map[string]string{
		"jobs":  `namespace "default" { policy = "write" }` + "\n" + `namespace "fleet-*" { policy = "read" capabilities = ["alloc-exec"] }`,
		"nodes": `node { policy = "read" }` + "\n" + `agent { policy = "read" }`,
		"ops":   `operator { policy = "read" }`,
	})
	for _, tc := range []struct {
		name  string
		cache *aclCache
	}{{"uncached", nil}, {"cached", newACLCache(aclCacheSize)}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := resolveToken(st, tc.cache, tok.SecretID, time.Now()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
