package jobspec_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/api"
	"github.com/nomad-edge/nomad/jobspec"
)

// TestParse_Artifact checks the artifact block in upstream's wire shape
// (GetterSource, GetterOptions, GetterHeaders, GetterMode, RelativeDest),
// repeated blocks kept in order.
func TestParse_Artifact(t *testing.T) {
	src := `job "edge" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      artifact {
        source      = "https://example.com/app.tar.gz"
        destination = "local/app"
        mode        = "dir"
        options {
          checksum = "sha256:abc"
        }
        headers {
          User-Agent = "edge"
        }
      }
      artifact {
        source = "https://example.com/conf.txt"
      }
    }
  }
}
`
	job, err := jobspec.Parse("x.hcl", []byte(src))
	must.NoError(t, err)
	must.Eq(t, []*api.TaskArtifact{{
		GetterSource:  new("https://example.com/app.tar.gz"),
		RelativeDest:  new("local/app"),
		GetterMode:    new("dir"),
		GetterOptions: map[string]string{"checksum": "sha256:abc"},
		GetterHeaders: map[string]string{"User-Agent": "edge"},
	}, {
		GetterSource: new("https://example.com/conf.txt"),
	}}, job.TaskGroups[0].Tasks[0].Artifacts)
}

// TestParse_ArtifactRefused checks that a destination leaving the
// allocation directory, an unknown mode, an unknown key and a missing
// source are each refused at their position, naming the field.
func TestParse_ArtifactRefused(t *testing.T) {
	src := "job \"j\" {\n  group \"g\" {\n    task \"t\" {\n      driver = \"raw_exec\"\n" +
		"      artifact {\n        source = \"https://x/y\"\n        destination = \"../../etc\"\n        mode = \"tree\"\n        bogus = 1\n      }\n" +
		"      artifact {\n        destination = \"../alloc/data\"\n      }\n    }\n  }\n}\n"
	_, err := jobspec.Parse("x.hcl", []byte(src))
	must.Error(t, err)
	msg := err.Error()
	must.StrContains(t, msg, `x.hcl:7:23: invalid destination "../../etc" in artifact block of task "t": it escapes the allocation directory`)
	must.StrContains(t, msg, `x.hcl:8:16: invalid mode "tree" in artifact block of task "t": must be one of any, file, dir`)
	must.StrContains(t, msg, `x.hcl:9:9: unsupported attribute "bogus" in artifact block of task "t"`)
	must.StrContains(t, msg, `x.hcl:11:7: missing source in artifact block of task "t"`)
	must.StrNotContains(t, msg, "../alloc/data")
}
