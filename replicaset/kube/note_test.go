package kube

import (
	"fmt"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// TestListNote_Properties: the note fits the budget, keeps whole items in
// order, and counts exactly the items it leaves out.
func TestListNote_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		items := rapid.SliceOf(rapid.StringMatching(`[a-z0-9-]{1,70}`)).Draw(t, "items")
		budget := rapid.IntRange(40, 2000).Draw(t, "budget")
		note := listNote(items, ", ", budget)
		if len(note) > budget {
			t.Fatalf("note of %d characters over the budget %d: %q", len(note), budget, note)
		}
		kept, left := note, 0
		if i := strings.LastIndex(note, ", and "); i >= 0 && strings.HasSuffix(note, " more") {
			kept = note[:i]
			if _, err := fmt.Sscanf(note[i:], ", and %d more", &left); err != nil {
				t.Fatalf("bad tail in %q: %v", note, err)
			}
		}
		var got []string
		if kept != "" {
			got = strings.Split(kept, ", ")
		}
		if len(got)+left != len(items) {
			t.Fatalf("%d shown + %d counted != %d items: %q", len(got), left, len(items), note)
		}
		for i, g := range got {
			if i == 0 && g != items[0] && strings.HasSuffix(g, "...") {
				// Cut only when the whole first item and the count do not fit.
				whole := len(items[0])
				if left > 0 {
					whole += len(fmt.Sprintf(", and %d more", left))
				}
				if !strings.HasPrefix(items[0], strings.TrimSuffix(g, "...")) || whole <= budget {
					t.Fatalf("first item %q cut to %q within budget %d", items[0], g, budget)
				}
				continue
			}
			if g != items[i] {
				t.Fatalf("item %d shown as %q, is %q", i, g, items[i])
			}
		}
		if sum := len(strings.Join(items, ", ")); sum <= budget && left > 0 {
			t.Fatalf("everything fits in %d (%d) yet %d were left out: %q", budget, sum, left, note)
		}
	})
}

// TestListNote_LongFirstItem cuts an item longer than the budget.
func TestListNote_LongFirstItem(t *testing.T) {
	long := strings.Repeat("x", 100)
	got := listNote([]string{long, "b"}, "; ", 50)
	if len(got) > 50 || !strings.HasPrefix(got, "xxx") || !strings.Contains(got, "...; and 1 more") {
		t.Errorf("listNote = %q (%d characters)", got, len(got))
	}
}
