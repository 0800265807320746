package allocrunner

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/shoenig/test/must"

	"github.com/nomad-edge/nomad/nomad/structs"
)

// BenchmarkAllocDir_Build measures building one allocation's directory tree
// (one task: 9 directories, 2 log files) under a root shared with the
// allocations built before it, as a client placing a batch does; a fresh
// root every 1,000 allocations keeps a long run from measuring a directory
// of a million entries. Nothing is removed until the end: on ext4 without a
// journal, inodes freed in the last seconds to minutes make every new one
// scan past them, so deleting inside the loop would measure that instead.
func BenchmarkAllocDir_Build(b *testing.B) {
	for _, fs := range []string{"disk", "tmpfs"} {
		b.Run("fs="+fs, func(b *testing.B) {
			base := b.TempDir()
			if fs == "tmpfs" {
				st, err := os.Stat("/dev/shm")
				if err != nil || !st.IsDir() {
					b.Skip("no /dev/shm")
				}
				base, err = os.MkdirTemp("/dev/shm", "nomad-bench-")
				must.NoError(b, err)
				b.Cleanup(func() { _ = os.RemoveAll(base) })
			}
			ids := make([]string, 1000)
			for i := range ids {
				ids[i] = structs.GenerateUUID()
			}
			tasks := []string{"web"}
			round, n, root := 0, 0, ""
			for b.Loop() {
				if n%len(ids) == 0 {
					b.StopTimer()
					round++
					root = filepath.Join(base, strconv.Itoa(round), "alloc")
					must.NoError(b, os.MkdirAll(root, 0o755))
					b.StartTimer()
				}
				if err := NewAllocDir(root, ids[n%len(ids)]).Build(tasks); err != nil {
					b.Fatal(err)
				}
				n++
			}
		})
	}
}
