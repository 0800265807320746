package acl

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestParse_NamespaceReadCannotWrite checks the core promise of a read
// policy: a token holding it lists and reads jobs but cannot submit them.
func TestParse_NamespaceReadCannotWrite(t *testing.T) {
	p, err := Parse("readonly", `
namespace "default" { policy = "read" }
namespace "web-*" { capabilities = ["submit-job"] }
node { policy = "read" }
agent { policy = "write" }
operator { policy = "deny" }
`)
	must.NoError(t, err)
	a := NewACL([]*Policy{p})
	must.True(t, a.AllowNamespaceOperation("default", NamespaceCapabilityReadJob))
	must.False(t, a.AllowNamespaceOperation("default", NamespaceCapabilitySubmitJob))
	must.True(t, a.AllowNamespaceOperation("web-prod", NamespaceCapabilitySubmitJob))
	must.False(t, a.AllowNamespaceOperation("other", NamespaceCapabilityReadJob))
	must.True(t, a.AllowNodeRead())
	must.False(t, a.AllowNodeWrite())
	must.True(t, a.AllowAgentWrite())
	must.False(t, a.AllowOperatorRead())
	must.False(t, a.IsManagement())
}

// TestNewACL_DenyWins checks that a deny in one policy beats a grant in
// another, so an operator can revoke by adding a policy.
func TestNewACL_DenyWins(t *testing.T) {
	w, err := Parse("w", `namespace "default" { policy = "write" }
node { policy = "write" }`)
	must.NoError(t, err)
	d, err := Parse("d", `namespace "default" { policy = "deny" }
node { policy = "deny" }`)
	must.NoError(t, err)
	a := NewACL([]*Policy{w, d})
	must.False(t, a.AllowNamespaceOperation("default", NamespaceCapabilityReadJob))
	must.False(t, a.AllowNodeRead())
}

// TestACL_NilAndManagementAllowAll checks the two ACLs that may do
// anything: none (ACLs disabled) and a management token's.
func TestACL_NilAndManagementAllowAll(t *testing.T) {
	for _, a := range []*ACL{nil, ManagementACL} {
		must.True(t, a.AllowNamespaceOperation("any", NamespaceCapabilitySubmitJob))
		must.True(t, a.AllowOperatorWrite())
	}
}

// TestParse_Errors checks that a mistyped policy names the place and the
// problem instead of silently granting less (or more) than meant.
func TestParse_Errors(t *testing.T) {
	cases := map[string]struct{ rules, want string }{
		"unknown block":      {`nmespace "x" { policy = "read" }`, `p:1:1: Unsupported block type`},
		"unknown key":        {`namespace "x" { polcy = "read" }`, `p:1:17: Unsupported argument`},
		"bad policy":         {"\nnode { policy = \"admin\" }", `p:2:1: node: invalid policy "admin"`},
		"bad ns policy":      {`namespace "x" { policy = "rw" }`, `p:1:1: namespace "x": invalid policy "rw"`},
		"unknown capability": {`namespace "x" { capabilities = ["fly"] }`, `unknown capability "fly"`},
		"syntax":             {`namespace "x" {`, `p:1:`},
		"deep":               {"node { policy = " + deep(200) + " }", "nesting deeper than"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("p", tc.rules)
			must.ErrorContains(t, err, tc.want)
		})
	}
}

func deep(n int) string {
	s := `"read"`
	for range n {
		s = "(" + s + ")"
	}
	return s
}

// TestGlobMatch checks the namespace wildcard rules.
func TestGlobMatch(t *testing.T) {
	must.True(t, globMatch("*", "anything"))
	must.True(t, globMatch("web-*", "web-1"))
	must.True(t, globMatch("*-prod", "api-prod"))
	must.True(t, globMatch("a*b*c", "aXbYc"))
	must.False(t, globMatch("web-*", "api-1"))
	must.False(t, globMatch("a*c", "abd"))
}

// node_pool rules grant read or write on pools by exact name or glob; the
// most specific rule wins and deny beats everything, as for namespaces.
func TestACL_NodePools(t *testing.T) {
	p, err := Parse("p", `
node_pool "edge" { policy = "write" }
node_pool "edge-*" { policy = "read" }
node_pool "edge-lab" { policy = "deny" }
`)
	must.NoError(t, err)
	a := NewACL([]*Policy{p})
	must.True(t, a.AllowNodePool("edge", true))
	must.True(t, a.AllowNodePool("edge-north", false))
	must.False(t, a.AllowNodePool("edge-north", true))
	must.False(t, a.AllowNodePool("edge-lab", false))
	must.False(t, a.AllowNodePool("default", false))
	must.True(t, ManagementACL.AllowNodePool("default", true))

	_, err = Parse("bad", `node_pool "x" { policy = "admin" }`)
	must.ErrorContains(t, err, `node_pool "x": invalid policy "admin"`)
}
