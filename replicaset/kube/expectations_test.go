package kube

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestExpectations(t *testing.T) {
	var e expectations
	e.ttl = time.Minute
	const owner = "ns/set"
	if got := e.check(owner, nil, t0); got != expectMet {
		t.Fatalf("Check with nothing expected = %v, want Met", got)
	}
	e.expect(owner, []string{"a", "b"}, []string{"uid-old"}, t0)
	old := seenChild{name: "old", uid: "uid-old"}
	steps := []struct {
		desc  string
		cache []seenChild
		at    time.Duration
		want  expectState
	}{
		{"cache shows nothing new", []seenChild{old}, time.Second, expectWaiting},
		{"one create seen, the delete not", []seenChild{old, {name: "a", uid: "1"}}, 2 * time.Second, expectWaiting},
		{"the deleted child shows a deletion timestamp", []seenChild{{name: "old", uid: "uid-old", deleting: true}}, 3 * time.Second, expectWaiting},
		{"b never shows: expired after the TTL", nil, time.Minute, expectExpired},
		{"b finally shows: met", []seenChild{{name: "b", uid: "2"}}, time.Minute + time.Second, expectMet},
		{"met is forgotten", nil, time.Hour, expectMet},
	}
	for _, s := range steps {
		if got := e.check(owner, s.cache, t0.Add(s.at)); got != s.want {
			t.Fatalf("%s: Check = %v, want %v", s.desc, got, s.want)
		}
	}

	e.expect(owner, []string{"c"}, nil, t0)
	e.forgive(owner, "c")
	if got := e.check(owner, nil, t0); got != expectMet {
		t.Errorf("after Forgive: Check = %v, want Met", got)
	}
	e.expect(owner, nil, []string{"uid-x"}, t0)
	if got := e.check(owner, []seenChild{{name: "x", uid: "uid-x"}}, t0); got != expectWaiting {
		t.Errorf("a delete not yet seen: Check = %v, want Waiting", got)
	}
	e.forgiveDeletes(owner, "uid-x")
	if got := e.check(owner, []seenChild{{name: "x", uid: "uid-x"}}, t0); got != expectMet {
		t.Errorf("after ForgiveDeletes: Check = %v, want Met", got)
	}
	e.expect(owner, []string{"d"}, nil, t0)
	e.forget(owner)
	if got := e.check(owner, nil, t0); got != expectMet {
		t.Errorf("after Forget: Check = %v, want Met", got)
	}
	e.expect("other", []string{"x"}, nil, t0)
	if got := e.check(owner, nil, t0); got != expectMet {
		t.Errorf("another owner's expectations leak: Check = %v", got)
	}
}

// TestExpectations_Properties drives random writes and cache views: Check
// is Met exactly when every name created since the last Met is in the cache
// and every deleted UID is gone from it or deleting, and Expired only after
// the TTL.
func TestExpectations_Properties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var e expectations
		e.ttl = 10 * time.Second
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
				e.expect("o", []string{c}, []string{d}, now)
				continue
			}
			var cache []seenChild
			shown := map[string]bool{}
			live := map[string]bool{}
			for i := range 10 {
				if rapid.Bool().Draw(t, "listed") {
					deleting := rapid.Bool().Draw(t, "deleting")
					cache = append(cache, seenChild{name: fmt.Sprint("n", i), uid: fmt.Sprint("u", i), deleting: deleting})
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
			want := expectMet
			switch {
			case len(creates) == 0 && len(deletes) == 0:
			case now.Sub(since) >= e.ttl:
				want = expectExpired
			default:
				want = expectWaiting
			}
			if got := e.check("o", cache, now); got != want {
				t.Fatalf("step %d: Check = %v, want %v (unmet creates %v, deletes %v)", step, got, want, creates, deletes)
			}
		}
	})
}
