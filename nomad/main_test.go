package nomad

import (
	"testing"

	"github.com/nomad-edge/nomad/testutil/race"
)

// TestMain: the package's bubbled clusters on one P under the race
// detector (golang/go#78156).
func TestMain(m *testing.M) { race.Main(m) }
