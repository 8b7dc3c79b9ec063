package kube

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// expectationTTL is how long a pass's writes may stay unseen by the
// cache before the reconciler stops waiting and reads the API server
// directly, as the Kubernetes ReplicaSet controller's expectations do.
const expectationTTL = 5 * time.Minute

// expectations remembers, per owner, the children a pass created or
// adopted (by name) and deleted or released (by UID), until the informer
// cache has seen those writes, and the names found taken by others' objects. A
// reconciler acts for an owner only when its expectations are met, so a
// stale cache can never make it create or delete twice. The zero value is
// ready to use; it is safe for concurrent use.
type expectations struct {
	// ttl is how long expectations may go unmet before check reports them
	// expired; zero means expectationTTL.
	ttl time.Duration

	mu     sync.Mutex
	owners map[string]*pending
	taken  map[string]map[string]time.Time // per owner: name -> when found taken
	uids   map[string]string               // per owner: the UID what is remembered belongs to
}

type pending struct {
	creates map[string]struct{} // child names not yet seen in the cache
	deletes map[string]struct{} // child UIDs still seen live in the cache
	since   time.Time           // when the oldest unmet expectation was set
}

// seenChild is how the cache shows one child, for check.
type seenChild struct {
	name, uid string // identify the child
	deleting  bool   // the child has a deletion timestamp
}

// expectState is the outcome of check.
type expectState int

// The states check reports.
const (
	// expectMet means the cache has seen every write: act on it.
	expectMet expectState = iota
	// expectWaiting means the cache has not yet seen some write: do nothing
	// for this owner now, and look again soon.
	expectWaiting
	// expectExpired means the cache has not seen some write for longer than
	// the TTL: read the children from the API server instead of the cache,
	// and act on that.
	expectExpired
)

// String names the state, for logs.
func (s expectState) String() string {
	switch s {
	case expectMet:
		return "Met"
	case expectWaiting:
		return "Waiting"
	case expectExpired:
		return "Expired"
	}
	return fmt.Sprintf("expectState(%d)", int(s))
}

// expect records that a pass for owner created the named children and
// deleted the children with the given UIDs, at now. It adds to what is
// already expected.
func (e *expectations) expect(owner string, created, deletedUIDs []string, now time.Time) {
	if len(created) == 0 && len(deletedUIDs) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.owners == nil {
		e.owners = map[string]*pending{}
	}
	p, ok := e.owners[owner]
	if !ok {
		p = &pending{creates: map[string]struct{}{}, deletes: map[string]struct{}{}, since: now}
		e.owners[owner] = p
	}
	for _, n := range created {
		p.creates[n] = struct{}{}
	}
	for _, u := range deletedUIDs {
		p.deletes[u] = struct{}{}
	}
}

// check compares owner's expectations with the children the cache shows now
// and forgets those that are met: a created name is met once the cache
// lists a child of that name; a deleted UID once the cache no longer lists
// it live (it is gone, or has a deletion timestamp).
func (e *expectations) check(owner string, children []seenChild, now time.Time) expectState {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.owners[owner]
	if !ok {
		return expectMet
	}
	if len(p.creates) > 0 || len(p.deletes) > 0 {
		live := make(map[string]struct{}, len(children))
		names := make(map[string]struct{}, len(children))
		for _, c := range children {
			names[c.name] = struct{}{}
			if !c.deleting {
				live[c.uid] = struct{}{}
			}
		}
		for n := range p.creates {
			if _, ok := names[n]; ok {
				delete(p.creates, n)
			}
		}
		for u := range p.deletes {
			if _, ok := live[u]; !ok {
				delete(p.deletes, u)
			}
		}
	}
	switch {
	case len(p.creates) == 0 && len(p.deletes) == 0:
		delete(e.owners, owner)
		return expectMet
	case now.Sub(p.since) >= e.timeout():
		return expectExpired
	}
	return expectWaiting
}

// forget drops everything remembered for owner, when the owner is gone.
func (e *expectations) forget(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owners, owner)
	delete(e.taken, owner)
	delete(e.uids, owner)
}

// bind ties what is remembered for owner to the owner's UID: an owner
// deleted and created again under the same name, before any pass saw it
// gone, does not inherit its predecessor's expectations or taken names.
func (e *expectations) bind(owner, uid string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.uids == nil {
		e.uids = map[string]string{}
	}
	if old, ok := e.uids[owner]; ok && old != uid {
		delete(e.owners, owner)
		delete(e.taken, owner)
	}
	e.uids[owner] = uid
}

// resetPending drops owner's unmet expectations, after a live read from
// the API server showed what really happened.
func (e *expectations) resetPending(owner string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.owners, owner)
}

// noteTaken remembers names that objects of others were found to hold, so
// that owner's next passes name children around them. A name is kept for
// the TTL, after which it may be free again.
func (e *expectations) noteTaken(owner string, names []string, now time.Time) {
	if len(names) == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.taken == nil {
		e.taken = map[string]map[string]time.Time{}
	}
	m := e.taken[owner]
	if m == nil {
		m = map[string]time.Time{}
		e.taken[owner] = m
	}
	for _, n := range names {
		m[n] = now
	}
}

// takenNames returns the names owner must not use now, forgetting those
// noted longer than the TTL ago.
func (e *expectations) takenNames(owner string, now time.Time) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.taken[owner]
	var out []string
	for n, at := range m {
		if now.Sub(at) >= e.timeout() {
			delete(m, n)
			continue
		}
		out = append(out, n)
	}
	if m != nil && len(m) == 0 {
		delete(e.taken, owner)
	}
	slices.Sort(out)
	return out
}

// forgive drops the expectation of creates that failed, so the reconciler
// does not wait for children that will never appear.
func (e *expectations) forgive(owner string, names ...string) {
	e.drop(owner, func(p *pending) map[string]struct{} { return p.creates }, names)
}

// forgiveDeletes drops the expectation of deletes that failed.
func (e *expectations) forgiveDeletes(owner string, uids ...string) {
	e.drop(owner, func(p *pending) map[string]struct{} { return p.deletes }, uids)
}

// drop removes keys from one of owner's expectation sets.
func (e *expectations) drop(owner string, set func(*pending) map[string]struct{}, keys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.owners[owner]
	if !ok {
		return
	}
	for _, k := range keys {
		delete(set(p), k)
	}
	if len(p.creates) == 0 && len(p.deletes) == 0 {
		delete(e.owners, owner)
	}
}

// entries is the number of owners e remembers anything of: unmet
// expectations, names found taken, or the UID it is bound to.
func (e *expectations) entries() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := len(e.uids)
	for owner := range e.owners {
		if _, ok := e.uids[owner]; !ok {
			n++
		}
	}
	for owner := range e.taken {
		_, bound := e.uids[owner]
		_, pending := e.owners[owner]
		if !bound && !pending {
			n++
		}
	}
	return n
}

// timeout is e.ttl, or expectationTTL when that is zero.
func (e *expectations) timeout() time.Duration {
	if e.ttl <= 0 {
		return expectationTTL
	}
	return e.ttl
}
