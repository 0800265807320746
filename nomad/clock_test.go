package nomad

import (
	"time"

	"github.com/nomad-edge/nomad/helper/clock/clocktest"
)

// newManualClock returns the shared manual clock at a fixed instant.
func newManualClock() *clocktest.Manual {
	return clocktest.NewManual(time.Unix(1_700_000_000, 0))
}
