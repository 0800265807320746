// Package mock returns valid, fully canonicalized objects for tests. Each
// call returns fresh objects with new IDs, so tests can change them freely.
package mock
