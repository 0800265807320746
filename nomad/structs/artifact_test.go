package structs

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestTaskArtifact_Validate checks each refusal names the field (source,
// mode, destination, checksum), so a JSON submission gets the same
// errors a job file does.
func TestTaskArtifact_Validate(t *testing.T) {
	ok := &TaskArtifact{GetterSource: "https://x/y", GetterMode: "any", RelativeDest: "local/",
		GetterOptions: map[string]string{"checksum": "md5:d41d8cd98f00b204e9800998ecf8427e"}}
	must.NoError(t, ok.Validate())

	for _, c := range []struct {
		a    TaskArtifact
		want string
	}{
		{TaskArtifact{RelativeDest: "local/"}, "artifact source must be specified"},
		{TaskArtifact{GetterSource: "x", GetterMode: "tree"}, `invalid artifact mode "tree"`},
		{TaskArtifact{GetterSource: "x", RelativeDest: "../../etc"}, `artifact destination "../../etc" escapes the allocation directory`},
		{TaskArtifact{GetterSource: "x", GetterOptions: map[string]string{"checksum": "abc"}}, `not in the format type:value`},
		{TaskArtifact{GetterSource: "x", GetterOptions: map[string]string{"checksum": "crc:00"}}, `unsupported checksum type "crc"`},
		{TaskArtifact{GetterSource: "x", GetterOptions: map[string]string{"checksum": "sha256:00"}}, `invalid sha256 checksum`},
	} {
		err := c.a.Validate()
		must.Error(t, err)
		must.StrContains(t, err.Error(), c.want)
	}
	// Interpolated on the client: not checked here.
	must.NoError(t, (&TaskArtifact{GetterSource: "x", GetterOptions: map[string]string{"checksum": "${meta.sum}"}}).Validate())
}

// TestArtifactDestEscapes checks the confinement rule: the task's own
// directory and the shared alloc/ are inside, anything else is out.
func TestArtifactDestEscapes(t *testing.T) {
	for dest, escapes := range map[string]bool{
		"local/": false, "": false, ".": false, "/local/x": false, "../alloc/data": false,
		"local/../secrets": false, "..": true, "../other": true, "../../etc": true, "local/../../x": true,
	} {
		must.Eq(t, escapes, ArtifactDestEscapes(dest), must.Sprint(dest))
	}
}
