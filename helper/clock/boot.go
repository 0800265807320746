package clock

import "time"

// BootReading is where the machine's boot clock stood at one instant: the
// boot it belongs to and how long that boot has lasted, suspend included
// (Linux's CLOCK_BOOTTIME). Unlike a time.Time's monotonic reading, which
// means nothing outside the process that took it, two readings of the same
// boot can be compared by different processes: a client restarted without
// a reboot measures how long it was alone without trusting the wall clock.
type BootReading struct {
	BootID    string
	SinceBoot time.Duration
}

// BootClock reads the boot clock. Implementations must be safe for
// concurrent use.
type BootClock interface {
	// ReadBoot returns the current reading; ok is false where the
	// platform has no boot ID or boot clock.
	ReadBoot() (r BootReading, ok bool)
}

// RealBoot returns the machine's boot clock: /proc/sys/kernel/random/boot_id
// and CLOCK_BOOTTIME on Linux, none elsewhere.
func RealBoot() BootClock { return realBoot{} }

type realBoot struct{}

func (realBoot) ReadBoot() (BootReading, bool) { return readBoot() }
