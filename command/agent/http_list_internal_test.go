package agent

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hashicorp/go-bexpr"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

type pageItem struct {
	ID   string
	Even bool
}

// Following next tokens page by page, in either order and with or without
// a filter, returns every selected item exactly once and in order: no
// page boundary loses or repeats an entry.
func TestPage_FollowingTokensReturnsEachItemOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfDistinct(rapid.StringMatching(`[a-f0-9]{1,4}`), rapid.ID[string]).Draw(t, "ids")
		items := make([]pageItem, len(ids))
		for i, id := range ids {
			items[i] = pageItem{ID: id, Even: i%2 == 0}
		}
		o := listOptions{
			perPage: rapid.IntRange(1, 5).Draw(t, "perPage"),
			reverse: rapid.Bool().Draw(t, "reverse"),
		}
		filtered := rapid.Bool().Draw(t, "filtered")
		if filtered {
			ev, err := bexpr.CreateEvaluator("Even == true")
			must.NoError(t, err)
			o.filter = ev
		}
		key := func(p pageItem) string { return p.ID }

		var want []string
		for _, it := range items {
			if !filtered || it.Even {
				want = append(want, it.ID)
			}
		}
		slices.Sort(want)
		if o.reverse {
			slices.Reverse(want)
		}

		var got []string
		for pages := 0; ; pages++ {
			if pages > len(items)+1 {
				t.Fatalf("paging did not end")
			}
			w := httptest.NewRecorder()
			page, err := page(w, o, items, key)
			must.NoError(t, err)
			must.True(t, len(page) <= o.perPage)
			for _, p := range page {
				got = append(got, p.ID)
			}
			o.nextToken = w.Header().Get("X-Nomad-NextToken")
			if o.nextToken == "" {
				break
			}
		}
		must.Eq(t, want, got)
	})
}
