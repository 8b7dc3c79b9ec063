package vsphere

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/replicakit/replicakit/vmprovider"
)

// staleAfter is how long the watch may go without an answer from vCenter
// before its copy counts as stale, and how long one wait may take before
// the watch gives up on it: every wait ends within maxWait, so silence for
// two of them means vCenter no longer answers, even when no error says so
// (a connection whose packets are dropped).
const staleAfter = 2 * maxWait * time.Second

// answered records that vCenter answered a wait.
func (w *Watch) answered() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastSeen = time.Now()
}

// Health reports whether the watch's copy is current, and when vCenter last
// answered it (zero if never). The error is nil while the watch's
// collector answers; it wraps vmprovider.ErrUnreachable from the moment a
// wait fails (a partition, vCenter restarting, a session that cannot be
// renewed, a wait unanswered for 20 seconds, an account vCenter refuses
// the watch's calls for lack of privileges, when it also wraps
// ErrPrivileges and names them) until the next full copy, and whenever no
// answer came for 20 seconds. Cached refuses reads meanwhile: the VMs it would answer from
// are unknown, not gone, and callers such as vmprovider.Endpoints and
// vmprovider.Set plan around them.
func (w *Watch) Health() (lastSeen time.Time, err error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.lastSeen, w.health(time.Now())
}

// health is Health's error at now. The caller holds w.mu.
func (w *Watch) health(now time.Time) error {
	switch {
	case errors.Is(w.down, ErrPrivileges):
		// Reachable, but refused: the VMs are as unknown to the watch as
		// if vCenter did not answer, and the account needs fixing.
		return fmt.Errorf("vCenter watch: refused by vCenter, so its VMs are unknown (%w; last answer %s): %w",
			vmprovider.ErrUnreachable, since(w.lastSeen, now), w.down)
	case w.down != nil:
		return fmt.Errorf("vCenter watch: %w (last answer %s): %w", vmprovider.ErrUnreachable, since(w.lastSeen, now), w.down)
	case !w.lastSeen.IsZero() && now.Sub(w.lastSeen) > staleAfter:
		return fmt.Errorf("vCenter watch: %w: no answer for %s", vmprovider.ErrUnreachable, now.Sub(w.lastSeen).Round(time.Second))
	}
	return nil
}

// since describes how long ago t was.
func since(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return now.Sub(t).Round(time.Second).String() + " ago"
}

// tidy runs f, a call that tidies up after a wait, with a context that is
// not canceled with ctx but bounded, so that a link that drops what it
// carries cannot hold the watch for ever.
func tidy(ctx context.Context, f func(context.Context) error) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), staleAfter)
	defer cancel()
	_ = f(c)
}
