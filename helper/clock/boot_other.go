//go:build !linux

package clock

// BootID identifies the current boot; this platform does not say.
func BootID() string { return "" }

func readBoot() (BootReading, bool) { return BootReading{}, false }
