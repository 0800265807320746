//go:build linux

package clock

import (
	"bytes"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/shoenig/test/must"
)

// TestBootTime_WithinTheKernelsSecond checks that the boot time is the
// kernel's btime (whole seconds, from /proc/stat) refined below the second,
// not the second itself: task start times derived from it must match the
// times the client recorded, which a boot at x.75 s put 0.75 s off.
func TestBootTime_WithinTheKernelsSecond(t *testing.T) {
	b, err := os.ReadFile("/proc/stat")
	must.NoError(t, err)
	var btime int64 = -1
	for _, line := range bytes.Split(b, []byte{'\n'}) {
		if v, ok := bytes.CutPrefix(line, []byte("btime ")); ok {
			btime, err = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			must.NoError(t, err)
		}
	}
	must.NonNegative(t, btime, must.Sprint("/proc/stat has no btime"))
	boot := BootTime()
	kernel := time.Unix(btime, 0)
	// The kernel truncates; allow a millisecond for a wall clock that was
	// slewed since the kernel took its figure.
	must.False(t, boot.Before(kernel.Add(-time.Millisecond)), must.Sprintf("boot %s before btime %s", boot, kernel))
	must.True(t, boot.Before(kernel.Add(time.Second+time.Millisecond)), must.Sprintf("boot %s a second past btime %s", boot, kernel))
	must.True(t, BootTime().Equal(boot), must.Sprint("read once: every call gives the same time"))
}
