package kube

import (
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// restartLog remembers, per owner, the children a pass restarted (or
// began to prepare to leave, or took back) and when, until the cache
// shows the write: a pass that read them before that would find them
// still due (and still annotated AnnotationRemediate) and restart them
// again, or choose them (or others) to leave again, as a stale cache would
// create a child twice without the expectations.
type restartLog struct {
	mu sync.Mutex
	m  map[string]map[string]pendingWrite // owner key → child UID → its write
}

// pendingWrite is a write to a child the cache may not show yet: when it
// was made, and how to tell that a child shows it.
type pendingWrite struct {
	at    time.Time
	shown func(c client.Object, at time.Time) bool
}

// record remembers the children of the owner key restarted at now.
func (l *restartLog) record(key string, restarted []restart, now time.Time) {
	for _, x := range restarted {
		l.expect(key, string(x.from.GetUID()), now, shows)
	}
}

// expect remembers a write at now to the owner key's child uid, which a
// child shows when shown says so.
func (l *restartLog) expect(key, uid string, now time.Time, shown func(client.Object, time.Time) bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]map[string]pendingWrite{}
	}
	if l.m[key] == nil {
		l.m[key] = map[string]pendingWrite{}
	}
	l.m[key][uid] = pendingWrite{at: now, shown: shown}
}

// unseen reports whether a restart of the owner key's children is not
// yet shown by children (as the cache has them), forgetting those it
// shows, those gone or being deleted, and those older than ttl.
func (l *restartLog) unseen(key string, children []client.Object, now time.Time, ttl time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	pending := l.m[key]
	if len(pending) == 0 {
		return false
	}
	byUID := make(map[string]client.Object, len(children))
	for _, c := range children {
		byUID[string(c.GetUID())] = c
	}
	for uid, w := range pending {
		c, ok := byUID[uid]
		if !ok || c.GetDeletionTimestamp() != nil || now.Sub(w.at) > ttl || w.shown(c, w.at) {
			delete(pending, uid)
		}
	}
	if len(pending) == 0 {
		delete(l.m, key)
		return false
	}
	return true
}

// shows reports whether c's AnnotationHealth records a restart at at or
// later (to the second, as earlier releases kept it, or finer).
func shows(c client.Object, at time.Time) bool {
	h, ok := decodeHealth(c.GetAnnotations()[AnnotationHealth])
	return ok && h.Restarted && !h.Started.Before(at.Truncate(time.Second))
}

// forget drops what the log holds of the owner key.
func (l *restartLog) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, key)
}

// restartTTL is how long a restart may stay unseen by the cache before a
// pass stops waiting for it: the expectations' TTL.
func (r *Reconciler[O, C]) restartTTL() time.Duration {
	return r.expectations.timeout()
}
