//go:build !linux

package clock

import "time"

// BootID identifies the current boot; this platform does not say.
func BootID() string { return "" }

func readBoot() (BootReading, bool) { return BootReading{}, false }

// BootTime returns the zero time: this platform has no boot clock.
func BootTime() time.Time { return time.Time{} }
