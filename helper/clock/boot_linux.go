//go:build linux

package clock

import (
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// BootID identifies the current boot; "" when the kernel does not say.
func BootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func readBoot() (BootReading, bool) {
	id := BootID()
	if id == "" {
		return BootReading{}, false
	}
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return BootReading{}, false
	}
	return BootReading{BootID: id, SinceBoot: time.Duration(ts.Nano())}, true
}
