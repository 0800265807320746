package upstreamstate

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/shoenig/test/must"
	bolt "go.etcd.io/bbolt"
	"pgregory.net/rapid"
)

const (
	sleeperAlloc = "38eaf9d5-d942-8d5d-615a-04dffedca171"
	mixedAlloc   = "b322839c-f90f-1d95-d18d-063a265cfaf8"
)

// mutate changes the fixture's state.db under dir with fn.
func mutate(t must.T, dir string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(filepath.Join(dir, StateFile), 0o600, &bolt.Options{Timeout: time.Second})
	must.NoError(t, err)
	must.NoError(t, db.Update(fn))
	must.NoError(t, db.Close())
}

// bucket walks to the bucket at path.
func bucket(tx *bolt.Tx, path ...string) *bolt.Bucket {
	b := tx.Bucket([]byte(path[0]))
	for _, p := range path[1:] {
		b = b.Bucket([]byte(p))
	}
	return b
}

func encode(t testing.TB, v any) []byte {
	t.Helper()
	var out []byte
	must.NoError(t, codec.NewEncoderBytes(&out, &codec.MsgpackHandle{}).Encode(v))
	return out
}

// handleWith is a local_state whose raw_exec driver state is ds.
func handleWith(t testing.TB, ds map[string]any) []byte {
	return encode(t, map[string]any{"TaskHandle": map[string]any{
		"Version":     1,
		"Config":      map[string]any{"ID": sleeperAlloc + "/t/00000000"},
		"DriverState": encode(t, ds),
	}})
}

func TestRead_BadLayout(t *testing.T) {
	alloc := []string{"allocations", sleeperAlloc}
	task := append(alloc, "task-t")
	put := func(path []string, key string, v []byte) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error { return bucket(tx, path...).Put([]byte(key), v) }
	}
	cases := []struct {
		name  string
		fn    func(t testing.TB, tx *bolt.Tx) error
		key   string // the key the error names
		want  string
		opts  Options
		allOK bool // no error
	}{
		{name: "no meta bucket", key: "meta", want: "no such bucket",
			fn: func(_ testing.TB, tx *bolt.Tx) error { return tx.DeleteBucket([]byte("meta")) }},
		{name: "other schema", key: "meta/version", want: `schema "4"`,
			fn: func(_ testing.TB, tx *bolt.Tx) error { return put([]string{"meta"}, "version", []byte("4"))(tx) }},
		{name: "version is a bucket", key: "meta/version", want: "a bucket where",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				b := tx.Bucket([]byte("meta"))
				if err := b.Delete([]byte("version")); err != nil {
					return err
				}
				_, err := b.CreateBucket([]byte("version"))
				return err
			}},
		{name: "value among allocations", key: "allocations/" + sleeperAlloc, want: "a value where an allocation's bucket",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				b := tx.Bucket([]byte("allocations"))
				if err := b.DeleteBucket([]byte(sleeperAlloc)); err != nil {
					return err
				}
				return b.Put([]byte(sleeperAlloc), []byte{0x80})
			}},
		{name: "bucket not named by an ID", key: "allocations/web", want: "not an allocation ID",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				_, err := tx.Bucket([]byte("allocations")).CreateBucket([]byte("web"))
				return err
			}},
		{name: "no alloc key", key: "allocations/" + sleeperAlloc + "/alloc", want: "missing",
			fn: func(_ testing.TB, tx *bolt.Tx) error { return bucket(tx, alloc...).Delete([]byte("alloc")) }},
		{name: "alloc is a bucket", key: "allocations/" + sleeperAlloc + "/alloc", want: "a bucket where a value belongs",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				b := bucket(tx, alloc...)
				if err := b.Delete([]byte("alloc")); err != nil {
					return err
				}
				_, err := b.CreateBucket([]byte("alloc"))
				return err
			}},
		{name: "alloc is an array", key: "allocations/" + sleeperAlloc + "/alloc", want: "not a msgpack map",
			fn: func(t testing.TB, tx *bolt.Tx) error { return put(alloc, "alloc", encode(t, []int{1, 2}))(tx) }},
		{name: "alloc cut short", key: "allocations/" + sleeperAlloc + "/alloc", want: "malformed msgpack",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				v := append([]byte(nil), bucket(tx, alloc...).Get([]byte("alloc"))...)
				return put(alloc, "alloc", v[:len(v)/2])(tx)
			}},
		{name: "alloc with bytes after it", key: "allocations/" + sleeperAlloc + "/alloc", want: "3 bytes after",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				v := append([]byte(nil), bucket(tx, alloc...).Get([]byte("alloc"))...)
				return put(alloc, "alloc", append(v, 1, 2, 3))(tx)
			}},
		{name: "another allocation's record", key: "allocations/" + sleeperAlloc + "/alloc", want: "in the bucket of",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				v := append([]byte(nil), bucket(tx, "allocations", mixedAlloc).Get([]byte("alloc"))...)
				return put(alloc, "alloc", v)(tx)
			}},
		{name: "record without Alloc", key: "allocations/" + sleeperAlloc + "/alloc", want: "no Alloc",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(alloc, "alloc", encode(t, map[string]any{"Allocation": 1}))(tx)
			}},
		{name: "group not in the job", key: "allocations/" + sleeperAlloc + "/alloc", want: "no group nope",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(alloc, "alloc", encode(t, map[string]any{"Alloc": map[string]any{
					"ID": sleeperAlloc, "TaskGroup": "nope", "Job": map[string]any{"TaskGroups": []any{}},
				}}))(tx)
			}},
		{name: "field of the wrong type", key: "allocations/" + sleeperAlloc + "/alloc", want: "malformed msgpack",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(alloc, "alloc", encode(t, map[string]any{"Alloc": map[string]any{"ID": map[string]any{"a": 1}}}))(tx)
			}},
		{name: "value too large", key: "allocations/" + sleeperAlloc + "/alloc", want: "more than the 1024",
			opts: Options{MaxValueSize: 1024},
			fn:   func(_ testing.TB, tx *bolt.Tx) error { return nil }},
		{name: "task value instead of bucket", key: "allocations/" + sleeperAlloc + "/task-t", want: "a value where a task's bucket",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				b := bucket(tx, alloc...)
				if err := b.DeleteBucket([]byte("task-t")); err != nil {
					return err
				}
				return b.Put([]byte("task-t"), []byte{0x80})
			}},
		{name: "task_state random", key: "allocations/" + sleeperAlloc + "/task-t/task_state", want: "malformed msgpack",
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				return put(task, "task_state", []byte{0x85, 0xc1, 0xff, 0x00, 0x12})(tx)
			}},
		{name: "task start not a time", key: "allocations/" + sleeperAlloc + "/task-t/task_state", want: "StartedAt",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(task, "task_state", encode(t, map[string]any{"State": "running", "StartedAt": []byte{9, 9}}))(tx)
			}},
		{name: "driver state not msgpack", key: "allocations/" + sleeperAlloc + "/task-t/local_state: TaskHandle.DriverState", want: "not a msgpack map",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(task, "local_state", encode(t, map[string]any{"TaskHandle": map[string]any{"DriverState": []byte("pid=1")}}))(tx)
			}},
		{name: "no task PID", key: "allocations/" + sleeperAlloc + "/task-t/local_state", want: "task PID 0",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(task, "local_state", handleWith(t, map[string]any{"Pid": 0}))(tx)
			}},
		{name: "task PID out of range", key: "allocations/" + sleeperAlloc + "/task-t/local_state", want: "task PID 99999999",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(task, "local_state", handleWith(t, map[string]any{"Pid": 99999999}))(tx)
			}},
		{name: "executor PID negative", key: "allocations/" + sleeperAlloc + "/task-t/local_state", want: "executor PID -3",
			fn: func(t testing.TB, tx *bolt.Tx) error {
				return put(task, "local_state", handleWith(t, map[string]any{"Pid": 7, "ReattachConfig": map[string]any{"Pid": -3}}))(tx)
			}},

		// What upstream may leave and the reader takes as it is.
		{name: "no allocations bucket", allOK: true,
			fn: func(_ testing.TB, tx *bolt.Tx) error { return tx.DeleteBucket([]byte("allocations")) }},
		{name: "unknown buckets and keys", allOK: true,
			fn: func(_ testing.TB, tx *bolt.Tx) error {
				if _, err := tx.CreateBucket([]byte("checks")); err != nil {
					return err
				}
				return put(alloc, "network_status", []byte{0xc1})(tx)
			}},
		{name: "task not recorded yet", allOK: true,
			fn: func(_ testing.TB, tx *bolt.Tx) error { return bucket(tx, alloc...).DeleteBucket([]byte("task-t")) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := fixtureDir(t)
			mutate(t, dir, func(tx *bolt.Tx) error { return c.fn(t, tx) })
			node, err := Read(dir, c.opts)
			if c.allOK {
				must.NoError(t, err)
				must.Eq(t, fixtureNode, node.NodeID)
				return
			}
			var fe *FormatError
			must.True(t, errors.As(err, &fe), must.Sprintf("%T %v", err, err))
			must.Eq(t, filepath.Join(dir, StateFile), fe.File)
			must.Eq(t, c.key, fe.Key)
			must.ErrorContains(t, err, c.want)
			must.ErrorContains(t, err, "key "+c.key)
		})
	}

	t.Run("task not recorded yet is reported without state", func(t *testing.T) {
		dir := fixtureDir(t)
		mutate(t, dir, func(tx *bolt.Tx) error { return bucket(tx, alloc...).DeleteBucket([]byte("task-t")) })
		node, err := Read(dir, Options{})
		must.NoError(t, err)
		tk := node.Allocs[0].Tasks[0]
		must.Eq(t, Task{Name: "t", Driver: "raw_exec"}, tk)
		must.Zero(t, tk.RunningPID())
	})
	t.Run("allocation of another node", func(t *testing.T) {
		dir := fixtureDir(t)
		must.NoError(t, os.WriteFile(filepath.Join(dir, NodeIDFile), []byte("11111111-2222-3333-4444-555555555555"), 0o600))
		_, err := Read(dir, Options{})
		must.ErrorContains(t, err, "is node "+fixtureNode+"'s")
	})
}

func TestRead_BadFile(t *testing.T) {
	fixture := func(t *testing.T) (string, []byte) {
		dir := fixtureDir(t)
		b, err := os.ReadFile(filepath.Join(dir, StateFile))
		must.NoError(t, err)
		return dir, b
	}
	_, whole := fixture(t)
	size := len(whole)

	want, err := Read(fixtureDir(t), Options{})
	must.NoError(t, err)
	// bbolt grows its file ahead of the pages in use: cutting free pages
	// off the end loses nothing, and the reader reads it all.
	for _, n := range []int{size - 4096, size - 1} {
		t.Run("free pages cut off", func(t *testing.T) {
			dir, b := fixture(t)
			must.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), b[:n], 0o600))
			got, err := Read(dir, Options{})
			must.NoError(t, err)
			must.Eq(t, want, got)
		})
	}
	for _, n := range []int{0, 1, 100, 4096, 8192, 16384, size / 4, size / 2} {
		t.Run("truncated", func(t *testing.T) {
			dir, b := fixture(t)
			must.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), b[:n], 0o600))
			_, err := Read(dir, Options{})
			must.Error(t, err, must.Sprintf("cut to %d of %d bytes", n, size))
			var fe *FormatError
			must.True(t, errors.As(err, &fe), must.Sprintf("%T %v", err, err))
			must.Eq(t, filepath.Join(dir, StateFile), fe.File)
		})
	}
	for _, n := range []int{16, 4096, 65536, size} {
		t.Run("random bytes", func(t *testing.T) {
			dir, _ := fixture(t)
			b := make([]byte, n)
			r := rand.New(rand.NewPCG(uint64(n), 7))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			must.NoError(t, os.WriteFile(filepath.Join(dir, StateFile), b, 0o600))
			_, err := Read(dir, Options{})
			must.ErrorContains(t, err, "not a bbolt file an upstream client wrote")
		})
	}
	t.Run("too large", func(t *testing.T) {
		dir, _ := fixture(t)
		// A sparse file: the size is refused before anything is read.
		must.NoError(t, os.Truncate(filepath.Join(dir, StateFile), 300<<20))
		_, err := Read(dir, Options{})
		must.ErrorContains(t, err, "314572800 bytes, more than the 268435456")
	})
	t.Run("a fifo", func(t *testing.T) {
		dir, _ := fixture(t)
		p := filepath.Join(dir, StateFile)
		must.NoError(t, os.Remove(p))
		must.NoError(t, syscall.Mkfifo(p, 0o600))
		_, err := Read(dir, Options{})
		must.ErrorContains(t, err, "not a regular file")
	})
	t.Run("locked by a running agent", func(t *testing.T) {
		dir, _ := fixture(t)
		db, err := bolt.Open(filepath.Join(dir, StateFile), 0o600, nil)
		must.NoError(t, err)
		defer db.Close()
		start := time.Now()
		_, err = Read(dir, Options{LockTimeout: 100 * time.Millisecond})
		must.ErrorIs(t, err, ErrLocked)
		must.Less(t, 5*time.Second, time.Since(start))
	})
}

// TestRead_Damaged damages the fixture's state.db at random (bytes
// overwritten, the file cut): Read returns a node or an error, never
// panics, and an error names the file.
func TestRead_Damaged(t *testing.T) {
	dir := fixtureDir(t)
	whole, err := os.ReadFile(filepath.Join(dir, StateFile))
	must.NoError(t, err)
	rapid.Check(t, func(rt *rapid.T) {
		b := append([]byte(nil), whole...)
		for _, off := range rapid.SliceOfN(rapid.IntRange(0, len(b)-1), 1, 64).Draw(rt, "offsets") {
			b[off] = rapid.Byte().Draw(rt, "byte")
		}
		if rapid.Bool().Draw(rt, "cut") {
			b = b[:rapid.IntRange(0, len(b)).Draw(rt, "length")]
		}
		must.NoError(rt, os.WriteFile(filepath.Join(dir, StateFile), b, 0o600))
		node, err := Read(dir, Options{})
		if err != nil {
			must.ErrorContains(rt, err, filepath.Join(dir, StateFile))
			return
		}
		must.Eq(rt, fixtureNode, node.NodeID)
	})
}

// TestRead_RandomValues puts random bytes at a key the reader decodes:
// Read returns a node or an error naming that key, and never panics.
func TestRead_RandomValues(t *testing.T) {
	keys := [][]string{
		{"allocations", sleeperAlloc, "alloc"},
		{"allocations", sleeperAlloc, "acknowledged_state"},
		{"allocations", mixedAlloc, "task-raw", "task_state"},
		{"allocations", mixedAlloc, "task-raw", "local_state"},
		{"allocations", mixedAlloc, "task-mock", "local_state"},
	}
	dir := fixtureDir(t)
	whole, err := os.ReadFile(filepath.Join(dir, StateFile))
	must.NoError(t, err)
	rapid.Check(t, func(rt *rapid.T) {
		must.NoError(rt, os.WriteFile(filepath.Join(dir, StateFile), whole, 0o600))
		k := rapid.SampledFrom(keys).Draw(rt, "key")
		v := rapid.SliceOfN(rapid.Byte(), 1, 512).Draw(rt, "value")
		if rapid.Bool().Draw(rt, "map") {
			v[0] = 0x80 | v[0]&0x0f // a map header, so that decoding starts
		}
		mutate(rt, dir, func(tx *bolt.Tx) error { return bucket(tx, k[:len(k)-1]...).Put([]byte(k[len(k)-1]), v) })
		_, err := Read(dir, Options{})
		if err != nil {
			var fe *FormatError
			must.True(rt, errors.As(err, &fe), must.Sprintf("%T %v", err, err))
			want := filepath.Join(k...)
			must.StrHasPrefix(rt, want, fe.Key)
		}
	})
}
