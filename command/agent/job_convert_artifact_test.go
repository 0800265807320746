package agent

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// TestArtifactDestEscapes_SameRule checks that the job file parser's copy
// of the destination rule (api) and the server's (structs) agree, since
// api may import nothing of ours.
func TestArtifactDestEscapes_SameRule(t *testing.T) {
	for _, d := range []string{"", ".", "local/", "/x", "../alloc", "../alloc/data", "..", "../x", "a/../../b", "../../etc"} {
		must.Eq(t, structs.ArtifactDestEscapes(d), api.ArtifactDestEscapes(d), must.Sprint(d))
	}
}

// TestConvertArtifacts checks the wire artifact becomes the server's with
// upstream's defaults filled by Canonicalize (mode any, local/, and
// local/<name> in file mode).
func TestConvertArtifacts(t *testing.T) {
	in := []*api.TaskArtifact{
		{GetterSource: new("https://x/a.tgz"), GetterHeaders: map[string]string{"A": "b"}},
		{GetterSource: new("https://x/bin/app"), GetterMode: new("file")},
	}
	for _, a := range in {
		a.Canonicalize()
	}
	must.Eq(t, []*structs.TaskArtifact{
		{GetterSource: "https://x/a.tgz", GetterHeaders: map[string]string{"A": "b"}, GetterMode: "any", RelativeDest: "local/"},
		{GetterSource: "https://x/bin/app", GetterMode: "file", RelativeDest: "local/app"},
	}, convertArtifacts(in))
}
