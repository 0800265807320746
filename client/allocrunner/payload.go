package allocrunner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// writeDispatchPayload writes a dispatched job's payload into the task's
// local/ directory at dispatch_payload.file. The write goes through an
// os.Root on local/, so neither ".." nor a symlink the task left there can
// put it anywhere else on the node. Tasks without the block, and jobs
// without a payload, get nothing.
func writeDispatchPayload(localDir string, job *structs.Job, task *structs.Task) error {
	if job == nil || task.DispatchPayload == nil || task.DispatchPayload.File == "" || len(job.Payload) == 0 {
		return nil
	}
	root, err := os.OpenRoot(localDir)
	if err != nil {
		return fmt.Errorf("writing dispatch payload: %w", err)
	}
	defer root.Close()
	name := filepath.Clean(task.DispatchPayload.File)
	if dir := filepath.Dir(name); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("writing dispatch payload %q: %w", task.DispatchPayload.File, err)
		}
	}
	if err := root.WriteFile(name, job.Payload, 0o644); err != nil {
		return fmt.Errorf("writing dispatch payload %q: %w", task.DispatchPayload.File, err)
	}
	return nil
}
