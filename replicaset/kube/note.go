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
	var b strings.Builder
	for i, it := range items {
		more := fmt.Sprintf("%sand %d more", sep, len(items)-i)
		add := it
		if i > 0 {
			add = sep + it
		}
		last := i == len(items)-1
		switch {
		case b.Len()+len(add) <= budget && (last || b.Len()+len(add)+len(more) <= budget):
			b.WriteString(add)
		case i == 0:
			cut := max(budget-len(more)-3, 0)
			b.WriteString(it[:min(cut, len(it))] + "...")
			if !last {
				b.WriteString(fmt.Sprintf("%sand %d more", sep, len(items)-1))
			}
			return b.String()
		default:
			b.WriteString(more)
			return b.String()
		}
	}
	return b.String()
}
