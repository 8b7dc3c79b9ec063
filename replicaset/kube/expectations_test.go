package kube_test

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/replicakit/replicakit/replicaset/kube"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestExpectations(t *testing.T) {
	var e kube.Expectations
	e.TTL = time.Minute
	const owner = "ns/set"
	if got := e.Check(owner, nil, t0); got != kube.Met {
		t.Fatalf("Check with nothing expected = %v, want Met", got)
	}
	e.Expect(owner, []string{"a", "b"}, []string{"uid-old"}, t0)
	old := kube.Seen{Name: "old", UID: "uid-old"}
	steps := []struct {
		desc  string
		cache []kube.Seen
		at    time.Duration
		want  kube.State
	}{
		{"cache shows nothing new", []kube.Seen{old}, time.Second, kube.Waiting},
		{"one create seen, the delete not", []kube.Seen{old, {Name: "a", UID: "1"}}, 2 * time.Second, kube.Waiting},
		{"the deleted child shows a deletion timestamp", []kube.Seen{{Name: "old", UID: "uid-old", Deleting: true}}, 3 * time.Second, kube.Waiting},
		{"b never shows: expired after the TTL", nil, time.Minute, kube.Expired},
		{"b finally shows: met", []kube.Seen{{Name: "b", UID: "2"}}, time.Minute + time.Second, kube.Met},
		{"met is forgotten", nil, time.Hour, kube.Met},
	}
	for _, s := range steps {
		if got := e.Check(owner, s.cache, t0.Add(s.at)); got != s.want {
			t.Fatalf("%s: Check = %v, want %v", s.desc, got, s.want)
		}
	}

	e.Expect(owner, []string{"c"}, nil, t0)
	e.Forgive(owner, "c")
	if got := e.Check(owner, nil, t0); got != kube.Met {
		t.Errorf("after Forgive: Check = %v, want Met", got)
	}
	e.Expect(owner, nil, []string{"uid-x"}, t0)
	if got := e.Check(owner, []kube.Seen{{Name: "x", UID: "uid-x"}}, t0); got != kube.Waiting {
		t.Errorf("a delete not yet seen: Check = %v, want Waiting", got)
	}
	e.ForgiveDeletes(owner, "uid-x")
	if got := e.Check(owner, []kube.Seen{{Name: "x", UID: "uid-x"}}, t0); got != kube.Met {
		t.Errorf("after ForgiveDeletes: Check = %v, want Met", got)
	}
	e.Expect(owner, []string{"d"}, nil, t0)
	e.Forget(owner)
	if got := e.Check(owner, nil, t0); got != kube.Met {
		t.Errorf("after Forget: Check = %v, want Met", got)
	}
	e.Expect("other", []string{"x"}, nil, t0)
	if got := e.Check(owner, nil, t0); got != kube.Met {
		t.Errorf("another owner's expectations leak: Check = %v", got)
	}
}

// TestExpectations_Properties drives random writes and cache views: Check
// is Met exactly when every name created since the last Met is in the cache
// and every deleted UID is gone from it or deleting, and Expired only after
// the TTL.
func TestExpectations_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var e kube.Expectations
		e.TTL = 10 * time.Second
		creates, deletes := map[string]bool{}, map[string]bool{}
		var since time.Time
		now := t0
		id := rapid.IntRange(0, 9)
		for step := range rapid.IntRange(1, 30).Draw(t, "steps") {
			now = now.Add(time.Duration(rapid.IntRange(0, 4).Draw(t, "dt")) * time.Second)
			if rapid.Bool().Draw(t, "write") {
				c := fmt.Sprint("n", id.Draw(t, "created"))
				d := fmt.Sprint("u", id.Draw(t, "deleted"))
				if len(creates) == 0 && len(deletes) == 0 {
					since = now
				}
				creates[c], deletes[d] = true, true
				e.Expect("o", []string{c}, []string{d}, now)
				continue
			}
			var cache []kube.Seen
			shown := map[string]bool{}
			live := map[string]bool{}
			for i := range 10 {
				if rapid.Bool().Draw(t, "listed") {
					deleting := rapid.Bool().Draw(t, "deleting")
					cache = append(cache, kube.Seen{Name: fmt.Sprint("n", i), UID: fmt.Sprint("u", i), Deleting: deleting})
					shown[fmt.Sprint("n", i)], live[fmt.Sprint("u", i)] = true, !deleting
				}
			}
			for c := range creates {
				if shown[c] {
					delete(creates, c)
				}
			}
			for d := range deletes {
				if !live[d] {
					delete(deletes, d)
				}
			}
			want := kube.Met
			switch {
			case len(creates) == 0 && len(deletes) == 0:
			case now.Sub(since) >= e.TTL:
				want = kube.Expired
			default:
				want = kube.Waiting
			}
			if got := e.Check("o", cache, now); got != want {
				t.Fatalf("step %d: Check = %v, want %v (unmet creates %v, deletes %v)", step, got, want, creates, deletes)
			}
		}
	})
}
