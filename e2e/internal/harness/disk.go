package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Disk is an agent's data dir on a disk of its own that a test can make
// fail as real disks do: fill it to the last byte (Fill), or have every
// write return an error (Fail) while reads still work, as a disk whose
// writes fail does. Heal undoes either.
//
// The space is a tmpfs of the given size; the agent sees it through a
// FUSE passthrough served by the test process, which is where the write
// errors come from. Mount it before the agent starts: the agent runs in a
// mount namespace of its own (ip netns exec), copied when it starts. The
// test process must not keep a file open on the disk: at its exit the
// kernel would wait on the FUSE server for that file, and the server is
// the exiting process.
type Disk struct {
	dir, backing string
	fail         atomic.Int32 // the errno writes return; 0 while healthy
	filler       string
}

// MountDisk puts dir on a new Disk of size (a tmpfs size, "256m").
func MountDisk(t testing.TB, dir, size string) *Disk {
	t.Helper()
	d := &Disk{dir: dir, backing: dir + ".disk"}
	for _, p := range []string{dir, d.backing} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatalf("a disk for %s: %v", dir, err)
		}
	}
	if err := unix.Mount("tmpfs", d.backing, "tmpfs", 0, "size="+size+",mode=0755"); err != nil {
		t.Fatalf("a disk for %s: mounting a tmpfs on %s: %v", dir, d.backing, err)
	}
	root, err := fs.NewLoopbackRoot(d.backing)
	if err != nil {
		_ = unix.Unmount(d.backing, unix.MNT_DETACH)
		t.Fatalf("a disk for %s: %v", dir, err)
	}
	top := &diskNode{LoopbackNode: root.(*fs.LoopbackNode), disk: d}
	top.RootData.RootNode = top
	_, err = fs.Mount(dir, top, &fs.Options{MountOptions: fuse.MountOptions{
		DirectMountStrict: true, AllowOther: true, FsName: "harness-disk", Name: "harness",
	}})
	if err != nil {
		_ = unix.Unmount(d.backing, unix.MNT_DETACH)
		t.Fatalf("a disk for %s: mounting the FUSE passthrough: %v", dir, err)
	}
	// Detached, not unmounted: the agents, still running when this runs
	// (their cleanup comes later), hold copies of the mounts in their own
	// namespaces, which go with them; the FUSE server serves them until
	// then, from this process.
	t.Cleanup(func() {
		_ = unix.Unmount(dir, unix.MNT_DETACH)
		_ = unix.Unmount(d.backing, unix.MNT_DETACH)
	})
	return d
}

// Fill writes a file until the disk refuses, and returns how many bytes
// it took.
func (d *Disk) Fill() (int64, error) {
	d.filler = filepath.Join(d.backing, "harness-filler")
	f, err := os.Create(d.filler)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// Written, not only allocated, until the filesystem refuses.
	block := make([]byte, 1<<20)
	var n int64
	for {
		w, err := f.Write(block)
		n += int64(w)
		if errors.Is(err, unix.ENOSPC) {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("filling %s: %w", d.dir, err)
		}
	}
}

// Fail makes every write to the disk (data, syncs, new files, renames,
// removals, truncations) return errno from now on; reads still work.
func (d *Disk) Fail(errno syscall.Errno) { d.fail.Store(int32(errno)) }

// Heal gives the disk its space and its writes back.
func (d *Disk) Heal() {
	d.fail.Store(0)
	if d.filler != "" {
		_ = os.Remove(d.filler)
		d.filler = ""
	}
}

// failing is the errno a write returns now, 0 when it may go through.
func (d *Disk) failing() syscall.Errno { return syscall.Errno(d.fail.Load()) }

// diskNode is a passthrough node whose writes fail while its disk does.
// The root is one, and it makes every node below one (WrapChild).
type diskNode struct {
	*fs.LoopbackNode
	disk *Disk
}

func (n *diskNode) WrapChild(_ context.Context, ops fs.InodeEmbedder) fs.InodeEmbedder {
	if ln, ok := ops.(*fs.LoopbackNode); ok {
		return &diskNode{LoopbackNode: ln, disk: n.disk}
	}
	return ops
}

func (n *diskNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if e := n.disk.failing(); e != 0 && flags&syscall.O_TRUNC != 0 {
		return nil, 0, e
	}
	fh, fl, e := n.LoopbackNode.Open(ctx, flags)
	return n.wrap(fh), fl, e
}

func (n *diskNode) Create(ctx context.Context, name string, flags, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	if e := n.disk.failing(); e != 0 {
		return nil, nil, 0, e
	}
	in, fh, fl, e := n.LoopbackNode.Create(ctx, name, flags, mode, out)
	return in, n.wrap(fh), fl, e
}

func (n *diskNode) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if e := n.disk.failing(); e != 0 {
		return nil, e
	}
	return n.LoopbackNode.Mkdir(ctx, name, mode, out)
}

func (n *diskNode) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if e := n.disk.failing(); e != 0 {
		return e
	}
	return n.LoopbackNode.Rename(ctx, name, newParent, newName, flags)
}

func (n *diskNode) Unlink(ctx context.Context, name string) syscall.Errno {
	if e := n.disk.failing(); e != 0 {
		return e
	}
	return n.LoopbackNode.Unlink(ctx, name)
}

func (n *diskNode) Rmdir(ctx context.Context, name string) syscall.Errno {
	if e := n.disk.failing(); e != 0 {
		return e
	}
	return n.LoopbackNode.Rmdir(ctx, name)
}

func (n *diskNode) Setattr(ctx context.Context, fh fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := n.disk.failing(); e != 0 {
		return e
	}
	if df, ok := fh.(*diskFile); ok {
		fh = df.LoopbackFile
	}
	return n.LoopbackNode.Setattr(ctx, fh, in, out)
}

func (n *diskNode) wrap(fh fs.FileHandle) fs.FileHandle {
	if lf, ok := fh.(*fs.LoopbackFile); ok {
		return &diskFile{LoopbackFile: lf, disk: n.disk}
	}
	return fh
}

// diskFile is a passthrough file whose writes fail while its disk does.
// It is never handed to the kernel for passthrough: every write comes
// here.
type diskFile struct {
	*fs.LoopbackFile
	disk *Disk
}

func (f *diskFile) PassthroughFd() (int, bool) { return 0, false }

func (f *diskFile) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	if e := f.disk.failing(); e != 0 {
		return 0, e
	}
	return f.LoopbackFile.Write(ctx, data, off)
}

func (f *diskFile) Writev(ctx context.Context, data [][]byte, off int64) (uint32, syscall.Errno) {
	if e := f.disk.failing(); e != 0 {
		return 0, e
	}
	return f.LoopbackFile.Writev(ctx, data, off)
}

func (f *diskFile) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	if e := f.disk.failing(); e != 0 {
		return e
	}
	return f.LoopbackFile.Fsync(ctx, flags)
}

func (f *diskFile) Allocate(ctx context.Context, off, size uint64, mode uint32) syscall.Errno {
	if e := f.disk.failing(); e != 0 {
		return e
	}
	return f.LoopbackFile.Allocate(ctx, off, size, mode)
}

func (f *diskFile) Setattr(ctx context.Context, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if e := f.disk.failing(); e != 0 {
		return e
	}
	return f.LoopbackFile.Setattr(ctx, in, out)
}
