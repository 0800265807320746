// Package registry knows the built-in task drivers by name. It is separate
// from package drivers because it must import every implementation, and the
// implementations import drivers.
package registry
