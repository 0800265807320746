package structs

import (
	"crypto/rand"
	"fmt"
)

// GenerateUUID returns a random RFC 4122 version 4 identifier.
func GenerateUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Errorf("crypto/rand failed: %w", err)) // the kernel's RNG does not fail
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// IsUUID reports whether s has the form of a UUID: 36 characters, hex
// digits in groups of 8-4-4-4-12 separated by dashes.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// ShortID returns the 8-character prefix the CLI shows.
func ShortID(id string) string {
	if len(id) > 8 {
		return id[:8]
	}
	return id
}
