//go:build linux

package exec

import (
	"cmp"
	"os"
	"path/filepath"
	"slices"
)

// chrootMounts are the read-only binds of chroot_env (host path to path in
// the root), parents before children, and without what the host lacks
// (/lib32 on a 64-bit-only host).
func chrootMounts(env map[string]string) []bindMount {
	var mounts []bindMount
	for src, dst := range env {
		src = filepath.Clean(src)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		mounts = append(mounts, bindMount{Source: src, Target: filepath.Clean(dst), ReadOnly: true})
	}
	slices.SortFunc(mounts, func(a, b bindMount) int { return cmp.Compare(a.Target, b.Target) })
	return mounts
}
