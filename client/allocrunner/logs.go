package allocrunner

import (
	"path/filepath"

	"github.com/nomad-edge/nomad/client/logrotate"
	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/nomad/structs"
)

// taskLogs are the rotators of a task's stdout and stderr, and the FIFOs
// its driver hands the task instead of the files.
type taskLogs struct {
	stdout, stderr string
	rotators       []*logrotate.Rotator
}

// startLogs starts rotating the task's output per its `logs` block, when
// its driver lets the client do so (Capabilities.LogFIFO). Otherwise, or
// when a FIFO cannot be made, the task writes <task>.stdout.0 directly,
// unrotated.
func (tr *TaskRunner) startLogs() {
	if tr.driver == nil || !drivers.CapabilitiesOf(tr.driver).LogFIFO {
		return
	}
	lc := tr.task.LogConfig
	if lc == nil {
		lc = structs.DefaultLogConfig()
	}
	dir := tr.allocDir.LogDir
	logs := &taskLogs{}
	for _, typ := range []string{"stdout", "stderr"} {
		fifo := filepath.Join(dir, "."+tr.task.Name+"."+typ+".fifo")
		r, err := logrotate.Start(logrotate.Config{
			FIFO: fifo, Dir: dir, Base: tr.task.Name + "." + typ,
			MaxFiles: lc.MaxFiles, MaxFileSize: int64(lc.MaxFileSizeMB) << 20,
		})
		if err != nil {
			tr.logger.Warn("cannot rotate the task's logs; it writes them unrotated", "error", err)
			for _, r := range logs.rotators {
				r.Stop()
			}
			return
		}
		logs.rotators = append(logs.rotators, r)
		if typ == "stdout" {
			logs.stdout = fifo
		} else {
			logs.stderr = fifo
		}
	}
	tr.mu.Lock()
	tr.logs = logs
	tr.mu.Unlock()
}

// stopLogs stops the rotators once the task is dead or the client goes.
func (tr *TaskRunner) stopLogs() {
	tr.mu.Lock()
	logs := tr.logs
	tr.mu.Unlock()
	if logs == nil {
		return
	}
	for _, r := range logs.rotators {
		r.Stop()
	}
}

// logPaths are the paths the driver opens as the task's stdout and stderr.
func (tr *TaskRunner) logPaths() (stdout, stderr string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if tr.logs != nil {
		return tr.logs.stdout, tr.logs.stderr
	}
	return tr.dir.StdoutPath, tr.dir.StderrPath
}
