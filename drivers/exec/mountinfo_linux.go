//go:build linux

package exec

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/nomad-edge/nomad/drivers"
	"github.com/nomad-edge/nomad/drivers/internal/proctask"
	"github.com/nomad-edge/nomad/helper/mounts"
)

// mountEntry is one line of /proc/self/mountinfo, the parts the driver
// reads.
type mountEntry struct {
	ID         int
	MountPoint string
	// Shared is "shared:N" (the mount has peers it propagates to), Slave
	// "master:N" (it receives from a peer group).
	Shared, Slave bool
}

// readMountInfo parses a mountinfo file (proc(5)).
func readMountInfo(path string) ([]mountEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 7 {
			continue
		}
		id, err := strconv.Atoi(fields[0])
		if err != nil {
			continue
		}
		e := mountEntry{ID: id, MountPoint: mounts.UnescapePath(fields[4])}
		for _, opt := range fields[6:] {
			if opt == "-" {
				break
			}
			e.Shared = e.Shared || strings.HasPrefix(opt, "shared:")
			e.Slave = e.Slave || strings.HasPrefix(opt, "master:")
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// mountOf is the host mount that holds path.
func mountOf(path string) (mountEntry, error) {
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, path, 0, unix.STATX_MNT_ID, &st); err != nil {
		return mountEntry{}, fmt.Errorf("statx %q: %w", path, err)
	}
	if st.Mask&unix.STATX_MNT_ID == 0 {
		return mountEntry{}, fmt.Errorf("statx %q: the kernel does not report mount IDs (Linux 5.8 or later needed)", path)
	}
	ms, err := readMountInfo("/proc/self/mountinfo")
	if err != nil {
		return mountEntry{}, err
	}
	for _, m := range ms {
		if uint64(m.ID) == st.Mnt_id {
			return m, nil
		}
	}
	return mountEntry{}, fmt.Errorf("mount %d of %q is not in /proc/self/mountinfo", st.Mnt_id, path)
}

// checkPropagation refuses a host-to-task or bidirectional mount of path
// whose host mount would not propagate anything, naming the fix: the
// kernel only propagates between mounts that are shared (or, into the
// task, a slave of a shared one), and a private host mount would make the
// mode a silent no-op.
func checkPropagation(path, mode string) error {
	m, err := mountOf(path)
	if err != nil {
		return fmt.Errorf("volume_mount propagation_mode %q: %w", mode, err)
	}
	if m.Shared || (mode == drivers.PropagationHostToTask && m.Slave) {
		return nil
	}
	return fmt.Errorf("volume_mount propagation_mode %q: the host mount holding %q (%s) is not shared, so nothing would propagate; make it shared (mount --make-shared %s) or use propagation_mode \"private\"",
		mode, path, m.MountPoint, m.MountPoint)
}

// mountsBelow are the host's mounts strictly below dir.
func mountsBelow(dir string) ([]proctask.MountRef, error) {
	ms, err := readMountInfo("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []proctask.MountRef
	for _, m := range ms {
		if strings.HasPrefix(m.MountPoint, dir+"/") {
			out = append(out, proctask.MountRef{ID: m.ID, Path: m.MountPoint})
		}
	}
	return out, nil
}

// recordBidirectional resolves each bidirectional volume's host path and
// records the mounts below it, before the task can add any.
func recordBidirectional(binds []bindMount) ([]proctask.VolumeMounts, error) {
	var out []proctask.VolumeMounts
	for _, b := range binds {
		if b.Propagation != drivers.PropagationBidirectional {
			continue
		}
		real, err := filepath.EvalSymlinks(b.Source)
		if err != nil {
			return nil, err
		}
		before, err := mountsBelow(real)
		if err != nil {
			return nil, err
		}
		out = append(out, proctask.VolumeMounts{HostPath: real, Before: before})
	}
	return out, nil
}

// unmountNew detaches, deepest first, every mount below each volume's host
// path that was not there when the task started: the task's own mounts,
// which propagated to the host and outlive its namespace (and also any the
// host made there while the task ran; see the package doc).
func unmountNew(vols []proctask.VolumeMounts, logger hclog.Logger) error {
	var errs []error
	for _, v := range vols {
		now, err := mountsBelow(v.HostPath)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var gone []string
		for _, m := range now {
			if !slices.Contains(v.Before, m) {
				gone = append(gone, m.Path)
			}
		}
		// Deepest first; a path twice is a stack, unmounted top down.
		slices.SortStableFunc(gone, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
		for _, p := range gone {
			err := unix.Unmount(p, unix.MNT_DETACH)
			// EINVAL: already gone with its parent, or by propagation.
			if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %q the task left on the host: %w", p, err))
				continue
			}
			logger.Debug("unmounted a mount the task left in a bidirectional volume", "path", p)
		}
	}
	return errors.Join(errs...)
}
