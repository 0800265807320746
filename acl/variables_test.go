package acl

import (
	"testing"

	"github.com/shoenig/test/must"
)

// A variables block parses inside a namespace rule, and an unknown
// capability is refused naming the namespace, the path and the value at
// the rule's position: a typo must not silently grant nothing.
func TestVariables_ParseAndRefuse(t *testing.T) {
	p, err := Parse("ok.hcl", `namespace "dev" {
  variables {
    path "project/*" { capabilities = ["read", "write"] }
  }
}`)
	must.NoError(t, err)
	must.Eq(t, "project/*", p.Namespaces[0].Variables.Paths[0].PathSpec)

	_, err = Parse("bad.hcl", `namespace "dev" {
  variables {
    path "project/*" { capabilities = ["reed"] }
  }
}`)
	must.ErrorContains(t, err, `bad.hcl:1:1: namespace "dev": variables path "project/*": unknown capability "reed"`)

	_, err = Parse("bad.hcl", `namespace "dev" {
  variables {
    path "x" { policy = "read" }
  }
}`)
	must.Error(t, err, must.Sprint("a path block takes capabilities, not policy"))
}

// The capability that applies to a variable: the namespace rule chosen as
// for jobs, then the best-matching path rule in it, whose deny wins; read
// and write include list; the namespace's coarse policy grants on every
// path; management and disabled ACLs allow all.
func TestVariables_AllowVariableOperation(t *testing.T) {
	p, err := Parse("p.hcl", `
namespace "dev" {
  variables {
    path "*" { capabilities = ["list"] }
    path "project/*" { capabilities = ["write", "read"] }
    path "project/secret" { capabilities = ["deny"] }
  }
}
namespace "prod-*" { policy = "read" }
namespace "ops" {
  policy = "write"
  variables {
    path "frozen/*" { capabilities = ["deny"] }
  }
}`)
	must.NoError(t, err)
	a := NewACL([]*Policy{p})
	for _, tc := range []struct {
		ns, path, cap string
		want          bool
	}{
		{"dev", "project/app", VariablesCapabilityWrite, true},
		{"dev", "project/app", VariablesCapabilityRead, true},
		{"dev", "project/app", VariablesCapabilityList, true},
		{"dev", "project/app", VariablesCapabilityDestroy, false},
		{"dev", "project/secret", VariablesCapabilityRead, false},
		{"dev", "other", VariablesCapabilityList, true},
		{"dev", "other", VariablesCapabilityRead, false},
		{"prod-eu", "any/path", VariablesCapabilityRead, true},
		{"prod-eu", "any/path", VariablesCapabilityWrite, false},
		{"ops", "app/x", VariablesCapabilityDestroy, true},
		{"ops", "frozen/x", VariablesCapabilityRead, false},
		{"default", "x", VariablesCapabilityList, false},
	} {
		must.Eq(t, tc.want, a.AllowVariableOperation(tc.ns, tc.path, tc.cap), must.Sprintf("%s in %s on %s", tc.cap, tc.ns, tc.path))
	}
	must.True(t, ManagementACL.AllowVariableOperation("any", "x", VariablesCapabilityDestroy))
	var off *ACL
	must.True(t, off.AllowVariableOperation("any", "x", VariablesCapabilityWrite))
}
