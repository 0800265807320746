package acl

import (
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestNewACL_Properties checks the merge rules on random policies: adding
// a policy never takes a capability away unless it denies the namespace,
// and a deny in any policy removes every capability there.
func TestNewACL_Properties(t *testing.T) {
	namespaces := []string{"default", "web", "web-*", "*"}
	policies := []string{"", PolicyRead, PolicyWrite, PolicyDeny}
	genPolicy := rapid.Custom(func(t *rapid.T) *Policy {
		p := &Policy{}
		for range rapid.IntRange(0, 3).Draw(t, "rules") {
			ns := &NamespacePolicy{
				Name:   rapid.SampledFrom(namespaces).Draw(t, "ns"),
				Policy: rapid.SampledFrom(policies).Draw(t, "policy"),
			}
			if rapid.Bool().Draw(t, "caps") {
				ns.Capabilities = []string{rapid.SampledFrom(writeCapabilities).Draw(t, "cap")}
			}
			p.Namespaces = append(p.Namespaces, ns)
		}
		return p
	})
	rapid.Check(t, func(t *rapid.T) {
		base := rapid.SliceOfN(genPolicy, 0, 3).Draw(t, "base")
		extra := genPolicy.Draw(t, "extra")
		before, after := NewACL(base), NewACL(append(slices.Clone(base), extra))
		for _, ns := range []string{"default", "web", "web-1", "other"} {
			for _, c := range writeCapabilities {
				if !before.AllowNamespaceOperation(ns, c) || after.AllowNamespaceOperation(ns, c) {
					continue
				}
				// Lost: extra must deny ns, or hold a more specific rule for it.
				if !shadows(extra, before, ns) {
					t.Fatalf("adding %+v took %s in %s away", extra.Namespaces, c, ns)
				}
			}
			for _, r := range extra.Namespaces {
				if r.Name == ns && r.Policy == PolicyDeny && after.AllowNamespaceOperation(ns, NamespaceCapabilityReadJob) {
					t.Fatalf("deny on %s ignored", ns)
				}
			}
		}
	})
}

// shadows reports whether p's rules change which rule applies to ns, or
// deny it: the only ways a policy may take capabilities away.
func shadows(p *Policy, before *ACL, ns string) bool {
	for _, r := range p.Namespaces {
		if !globMatch(r.Name, ns) {
			continue
		}
		if r.Policy == PolicyDeny {
			return true
		}
		if r.Name == ns && before.namespaces[ns] == nil {
			return true // an exact rule now hides the glob that granted it
		}
		if r.Name != ns && before.namespaces[ns] == nil && !hasGlob(before, r.Name) {
			return true // a new, more literal glob may win
		}
	}
	return false
}

func hasGlob(a *ACL, pattern string) bool {
	for _, g := range a.globs {
		if g.pattern == pattern {
			return true
		}
	}
	return false
}
