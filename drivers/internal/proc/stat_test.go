package proc

import (
	"testing"

	"github.com/shoenig/test/must"
)

// TestParseStat checks field extraction when the command name contains
// spaces and parentheses, which any process can choose and which would shift
// a naive split onto the wrong fields (and so the wrong start time).
func TestParseStat(t *testing.T) {
	line := "4242 (we ird) (na me) S 1 4240 4240 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 200 18446744073709551615\n"
	ps, err := ParseStat([]byte(line))
	must.NoError(t, err)
	must.Eq(t, byte('S'), ps.State)
	must.Eq(t, 4240, ps.Pgid)
	must.Eq(t, uint64(987654), ps.StartTime)
	must.Eq(t, uint64(1), ps.UserTicks)
	must.Eq(t, uint64(2), ps.SystemTicks)
	must.Eq(t, uint64(200), ps.RSSPages)
	must.False(t, ps.Exited())

	_, err = ParseStat([]byte("4242 (short) S 1 2"))
	must.Error(t, err)
	_, err = ParseStat([]byte("garbage"))
	must.Error(t, err)
}
