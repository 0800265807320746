package nomad

import (
	"container/list"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/nomad-edge/nomad/acl"
	"github.com/nomad-edge/nomad/nomad/state"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// aclCacheSize bounds how many compiled policy sets a server keeps. Tokens
// usually share a few sets of policies, so a small cache serves them all;
// the bound keeps a flood of distinct sets from growing memory.
const aclCacheSize = 512

// aclCache keeps compiled ACLs by the set of policies they came from.
// Parsing the HCL rules of three policies costs about 100 µs a request
// (BenchmarkResolveToken); the lookup of the policies that makes the key
// costs a few memdb reads.
//
// The key names each policy with its ModifyIndex (0 when it does not
// exist), so an update or delete of a policy makes a new key: a stale
// entry is never found again and ages out of the LRU.
type aclCache struct {
	mu      sync.Mutex
	max     int
	order   *list.List // front is most recently used; values are *aclCacheEntry
	entries map[string]*list.Element
}

type aclCacheEntry struct {
	key string
	acl *acl.ACL
}

func newACLCache(size int) *aclCache {
	return &aclCache{max: size, order: list.New(), entries: map[string]*list.Element{}}
}

func (c *aclCache) get(key string) (*acl.ACL, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*aclCacheEntry).acl, true
}

func (c *aclCache) put(key string, a *acl.ACL) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[key]; ok {
		c.order.MoveToFront(el)
		return
	}
	c.entries[key] = c.order.PushFront(&aclCacheEntry{key: key, acl: a})
	for c.order.Len() > c.max {
		oldest := c.order.Back()
		c.order.Remove(oldest)
		delete(c.entries, oldest.Value.(*aclCacheEntry).key)
	}
}

// len is the number of cached ACLs.
func (c *aclCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// aclForPolicies returns the ACL the named policies grant, compiling it
// only when this set of policies, at these versions, was not seen before.
// A nil cache compiles every time.
func aclForPolicies(st *state.StateStore, cache *aclCache, names []string) (*acl.ACL, error) {
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	found := make([]*structs.ACLPolicy, 0, len(sorted))
	var key strings.Builder
	for _, name := range sorted {
		p, err := st.ACLPolicyByName(nil, name)
		if err != nil {
			return nil, err
		}
		var version uint64
		if p != nil {
			version = p.ModifyIndex
			found = append(found, p)
		}
		// Names cannot hold NUL, so the key is unambiguous.
		key.WriteString(name)
		key.WriteByte(0)
		key.WriteString(strconv.FormatUint(version, 10))
		key.WriteByte(0)
	}
	if cache != nil {
		if a, ok := cache.get(key.String()); ok {
			return a, nil
		}
	}
	a := acl.NewACL(compilePolicies(found))
	if cache != nil {
		cache.put(key.String(), a)
	}
	return a, nil
}
