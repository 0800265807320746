// Package mounts lists and removes the mounts below a directory, so that
// a directory something else mounted into (upstream Nomad mounts a tmpfs
// on every task's secrets dir) can still be removed.
package mounts

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Mount is one line of the mount table: where, and the file system type.
type Mount struct {
	Point  string
	FSType string
}

// Table lists /proc/self/mounts in its order (the later of two mounts on
// one point is the visible one); nil where it cannot be read.
func Table() []Mount {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 3 {
			continue
		}
		out = append(out, Mount{Point: UnescapePath(fields[1]), FSType: fields[2]})
	}
	return out
}

// Under lists the mount points strictly below dir, deepest first (the
// order to unmount them in). It is empty where /proc/self/mounts cannot
// be read.
func Under(dir string) []string {
	prefix := filepath.Clean(dir) + string(filepath.Separator)
	var out []string
	for _, m := range Table() {
		if strings.HasPrefix(m.Point, prefix) {
			out = append([]string{m.Point}, out...)
		}
	}
	return out
}

// UnmountUnder detaches every mount below dir, deepest first, and returns
// the errors of those it could not.
func UnmountUnder(dir string) error {
	var errs []error
	for _, m := range Under(dir) {
		if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
		}
	}
	return errors.Join(errs...)
}

// UnescapePath undoes the octal escapes /proc/self/mounts and mountinfo
// write for space, tab, newline and backslash in a path (\040 for a space).
func UnescapePath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
