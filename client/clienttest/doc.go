// Package clienttest holds test helpers for the client: a fake of the
// servers' side of the client RPCs (the process boundary the client talks
// across) and factories for mock_driver allocations. Only tests import it.
package clienttest
