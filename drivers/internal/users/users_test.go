package users

import (
	"strconv"
	"testing"

	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

// The plugin options read as upstream writes them, and a typo is refused
// rather than read as an empty set (which would deny nothing).
func TestParseRanges(t *testing.T) {
	r, err := ParseRanges("0-100, 200,300-300")
	must.NoError(t, err)
	for id, want := range map[int]bool{0: true, 50: true, 100: true, 101: false, 200: true, 201: false, 300: true} {
		must.Eq(t, want, r.Contains(id), must.Sprintf("id %d", id))
	}
	empty, err := ParseRanges("")
	must.NoError(t, err)
	must.False(t, empty.Contains(0))
	for _, bad := range []string{"a", "10-5", "-1", "1-", "1-2-3", "5,x"} {
		_, err := ParseRanges(bad)
		must.Error(t, err, must.Sprint(bad))
	}
}

// Every id of a parsed range is contained, and none just outside it.
func TestParseRanges_Property(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lo := rapid.IntRange(0, 1<<20).Draw(t, "lo")
		hi := rapid.IntRange(lo, lo+1000).Draw(t, "hi")
		id := rapid.IntRange(max(0, lo-5), hi+5).Draw(t, "id")
		r, err := ParseRanges(itoa(lo) + "-" + itoa(hi))
		if err != nil {
			t.Fatal(err)
		}
		if r.Contains(id) != (id >= lo && id <= hi) {
			t.Fatalf("%d in %d-%d: %v", id, lo, hi, r.Contains(id))
		}
	})
}

// A denied uid or any denied group refuses the user, naming the option.
func TestPolicy_Check(t *testing.T) {
	uids, _ := ParseRanges("0")
	gids, _ := ParseRanges("10-20")
	p := Policy{DeniedUIDs: uids, DeniedGIDs: gids}
	must.NoError(t, p.Check("app", Credential{UID: 1000, GID: 1000, Groups: []int{1000, 30}}))
	err := p.Check("root", Credential{UID: 0, GID: 0})
	must.ErrorIs(t, err, ErrDenied)
	must.StrContains(t, err.Error(), "denied_host_uids")
	err = p.Check("app", Credential{UID: 1000, GID: 1000, Groups: []int{15}})
	must.ErrorIs(t, err, ErrDenied)
	must.StrContains(t, err.Error(), "gid 15")
	must.StrContains(t, err.Error(), "denied_host_gids")
}

func itoa(n int) string { return strconv.Itoa(n) }
