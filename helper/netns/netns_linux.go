//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// Supported reports whether this platform has network namespaces.
const Supported = true

// ErrNotNamespace is returned by Do when path is not a network namespace
// (a stale file whose bind mount is gone, or a typo).
var ErrNotNamespace = errors.New("not a network namespace")

// Create makes a new network namespace and pins it at path, creating
// path's directory. It fails if path exists.
func Create(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := onThread(func() error {
			if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
				return fmt.Errorf("unshare: %w", err)
			}
			self := fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid())
			if err := unix.Mount(self, path, "none", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("bind mount: %w", err)
			}
			return nil
		})
		errc <- err
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	if err := <-errc; err != nil {
		_ = os.Remove(path)
		return fmt.Errorf("netns %s: %w", path, err)
	}
	return nil
}

// Remove unpins the namespace at path and removes the file; the kernel
// frees the namespace once no process is left in it. A missing path is
// not an error.
func Remove(path string) error {
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("netns %s: unmount: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("netns %s: %w", path, err)
	}
	return nil
}

// Exists reports whether path is a pinned network namespace.
func Exists(path string) bool {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == unix.NSFS_MAGIC
}

// Do runs f on a thread of its own moved into the namespace at path, and
// returns f's error. A process forked by f (exec.Cmd.Start) starts in the
// namespace. f must not start goroutines that expect to be in it: they
// run on other threads.
func Do(path string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		restored, err := DoLocked(path, f)
		errc <- err
		if restored {
			runtime.UnlockOSThread()
		}
	}()
	return <-errc
}

// DoLocked is Do on the calling goroutine, which must have locked its
// thread (runtime.LockOSThread). restored is false when the thread could
// not be put back in its namespace: the caller must then end the goroutine
// with the thread still locked, so that the runtime retires it.
func DoLocked(path string, f func() error) (restored bool, err error) {
	if !Exists(path) {
		return true, fmt.Errorf("netns %s: %w", path, ErrNotNamespace)
	}
	target, err := os.Open(path)
	if err != nil {
		return true, fmt.Errorf("netns %s: %w", path, err)
	}
	defer target.Close()
	var ferr error
	restored, err = onThread(func() error {
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("netns %s: setns: %w", path, err)
		}
		ferr = f()
		return nil
	})
	if err != nil {
		return restored, err
	}
	return restored, ferr
}

// onThread runs change on the locked current thread and then puts the
// thread back in its original network namespace. restored is false when
// that failed: the caller must then leave the thread locked.
func onThread(change func() error) (restored bool, err error) {
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		return true, fmt.Errorf("opening the thread's namespace: %w", err)
	}
	defer orig.Close()
	err = change()
	if serr := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); serr != nil {
		return false, errors.Join(err, fmt.Errorf("returning the thread to its namespace: %w", serr))
	}
	return true, err
}
