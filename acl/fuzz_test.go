package acl

import (
	"testing"
)

// FuzzParse checks that no policy document, however malformed or deep,
// crashes the parser: rules arrive over the API and are parsed again on
// every call that resolves a token.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`namespace "default" { policy = "read" }`,
		`namespace "web-*" { capabilities = ["submit-job", "read-job"] }`,
		"node { policy = \"write\" }\nagent { policy = \"read\" }\noperator { policy = \"deny\" }",
		`namespace "x" { policy = ` + deep(100) + ` }`,
		`namespace { }`,
		`node = "read"`,
		"{{{{",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, rules string) {
		p, err := Parse("fuzz", rules)
		if err != nil {
			return
		}
		// Whatever parses compiles, and its checks answer.
		a := NewACL([]*Policy{p})
		_ = a.AllowNamespaceOperation("default", NamespaceCapabilityReadJob)
		_ = a.AllowNodeWrite()
	})
}
