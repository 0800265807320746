//go:build !linux

package netns

import "errors"

// Supported reports whether this platform has network namespaces.
const Supported = false

// ErrNotNamespace is returned by Do when path is not a network namespace.
var ErrNotNamespace = errors.New("not a network namespace")

var errUnsupported = errors.New("network namespaces are only supported on Linux")

// Create fails: no network namespaces here.
func Create(string) error { return errUnsupported }

// Remove fails: no network namespaces here.
func Remove(string) error { return errUnsupported }

// Exists reports false: no network namespaces here.
func Exists(string) bool { return false }

// Do fails: no network namespaces here.
func Do(string, func() error) error { return errUnsupported }

// DoLocked fails: no network namespaces here.
func DoLocked(string, func() error) (bool, error) { return true, errUnsupported }
