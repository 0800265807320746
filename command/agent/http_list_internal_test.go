package agent

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-bexpr"
	"github.com/shoenig/test/must"
	"pgregory.net/rapid"
)

type pageItem struct {
	ID          string
	CreateIndex uint64
	Even        bool
}

// Following next tokens page by page, in either order and with or without
// a filter, returns every selected item exactly once and in order: no
// page boundary loses or repeats an entry.
func TestPage_FollowingTokensReturnsEachItemOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfDistinct(rapid.StringMatching(`[a-f0-9]{1,4}`), rapid.ID[string]).Draw(t, "ids")
		items := make([]pageItem, len(ids))
		for i, id := range ids {
			items[i] = pageItem{ID: id, CreateIndex: rapid.Uint64Range(1, 4).Draw(t, "index"), Even: i%2 == 0}
		}
		byIndex := rapid.SampledFrom([]int{-1, 0, 1}).Draw(t, "byIndex")
		ord := listOrder[pageItem]{
			key:     func(p pageItem) listKey { return listKey{index: p.CreateIndex, id: p.ID} },
			byIndex: byIndex,
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
		var kept []pageItem
		for _, it := range items {
			if !filtered || it.Even {
				kept = append(kept, it)
			}
		}
		// The oracle: order by index in the list's direction, then by ID.
		slices.SortFunc(kept, func(a, b pageItem) int {
			if byIndex != 0 && a.CreateIndex != b.CreateIndex {
				if (a.CreateIndex < b.CreateIndex) == (byIndex > 0) {
					return -1
				}
				return 1
			}
			return strings.Compare(a.ID, b.ID)
		})
		if o.reverse {
			slices.Reverse(kept)
		}
		var want []string
		for _, it := range kept {
			want = append(want, it.ID)
		}

		var got []string
		for pages := 0; ; pages++ {
			if pages > len(items)+1 {
				t.Fatalf("paging did not end")
			}
			w := httptest.NewRecorder()
			page, err := page(w, o, items, ord)
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
