package kube

import (
	"fmt"
	"strings"
)

// maxNote keeps an event's note well under the 1024 characters the events
// API accepts, whatever the names and errors it lists.
const maxNote = 900

// listNote joins items with sep, stopping before the list would exceed
// budget characters; the items left out are counted at the end
// ("and 37 more"). Items are never cut in the middle, except a first item
// longer than the budget, which is cut and marked with "...".
func listNote(items []string, sep string, budget int) string {
	if all := strings.Join(items, sep); len(all) <= budget {
		return all
	}
	var b strings.Builder
	more := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("%sand %d more", sep, n)
	}
	for i, it := range items {
		add := it
		if i > 0 {
			add = sep + it
		}
		// Keep the item if the count of those after it still fits.
		if b.Len()+len(add)+len(more(len(items)-i-1)) <= budget {
			b.WriteString(add)
			continue
		}
		if i == 0 {
			tail := more(len(items) - 1)
			cut := max(budget-len(tail)-3, 0)
			return it[:min(cut, len(it))] + "..." + tail
		}
		// The previous item reserved room for this count.
		return b.String() + more(len(items)-i)
	}
	return b.String()
}
