//go:build !faultclock

package clock

// withFault is the production binary's: the real clock, unchanged. A test
// binary built with the faultclock tag has fault_on.go's instead.
func withFault(c Clock) Clock { return c }
