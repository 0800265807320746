package command

import (
	"fmt"
	"strings"
)

// minPrefixLength is the shortest ID prefix accepted for allocations,
// evaluations and nodes; one character matches too much to be useful.
const minPrefixLength = 2

// pickByPrefix returns the one item whose ID is prefix, or the only item
// whose ID starts with it. ok is false when there is no match or several;
// matches then holds the candidates (to be listed for the user).
func pickByPrefix[T any](items []T, id func(T) string, prefix string) (picked T, ok bool, matches []T) {
	for _, it := range items {
		if id(it) == prefix {
			return it, true, nil
		}
		if strings.HasPrefix(id(it), prefix) {
			matches = append(matches, it)
		}
	}
	if len(matches) == 1 {
		return matches[0], true, nil
	}
	var zero T
	return zero, false, matches
}

// checkPrefix validates an ID prefix given on the command line.
func checkPrefix(kind, prefix string) error {
	if len(prefix) < minPrefixLength {
		return fmt.Errorf("%s ID must contain at least %d characters", kind, minPrefixLength)
	}
	return nil
}
