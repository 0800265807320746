package structs_test

import (
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// A logs block that would keep nothing is refused at submission, naming
// the attribute, rather than leaving a task's output nowhere.
func TestLogConfig_Validate(t *testing.T) {
	must.NoError(t, (*structs.LogConfig)(nil).Validate())
	must.NoError(t, structs.DefaultLogConfig().Validate())
	must.ErrorContains(t, (&structs.LogConfig{MaxFiles: 0, MaxFileSizeMB: 1}).Validate(), "max_files")
	must.ErrorContains(t, (&structs.LogConfig{MaxFiles: 1, MaxFileSizeMB: 0}).Validate(), "max_file_size")
}
