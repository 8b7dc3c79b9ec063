package replicaset

import (
	"fmt"
	"slices"
	"time"
)

// flags are what a pass knows of one replica: decided once, when the
// pass classifies it, and changed after that only by the pass's own
// actions (a replica chosen, replaced, or moved onto the wanted revision
// in place).
type flags uint16

const (
	// fLive: the replica counts as live, and the rules may choose it.
	fLive flags = 1 << iota
	// fGone: being deleted, preparing to leave, or replaced in this
	// pass; it counts as being deleted.
	fGone
	// fNew: on the wanted revision, or moving onto it in place.
	fNew
	// fAvail: available (Replica.Available, a power cycle under way not).
	fAvail
	// fServe: available, or on an older revision and running: it may
	// serve (readyFlags).
	fServe
	// fFixed: never chosen in this pass: protected from scale-in, or a
	// preparation for an in-place update taken back.
	fFixed
	// fMarked: marked for deletion.
	fMarked
	// fNotMade: counted on the wanted revision (with fNew) without having
	// been made on it: moving onto it in place (a power cycle under way,
	// or updated or waiting in this pass), or recording no revision while
	// the spec names one (adopted). Never a replacement coming up.
	fNotMade
	// fChosen: chosen to leave in this pass.
	fChosen
	// fLeaving: prepares to leave (Replica.Preparing) and is not taken
	// back; emit settles it.
	fLeaving
	// fCycling: prepares for an in-place update that still applies:
	// planned as the power cycle under way.
	fCycling
	// fBack: taken back from preparing (Plan.Cancel), unless chosen again.
	fBack
	// fUnknown: unreachable, or in an unreachable zone (Plan.Unknown).
	fUnknown
	// fBroken: not provisioned or failed (PhasePending, PhaseFailed).
	fBroken
)

// counted are the flags the counts are made of (the lowest: see
// countAll).
const counted = fLive | fGone | fNew | fAvail | fServe | fFixed | fMarked | fNotMade

// counts are a pass's counts of its known replicas, kept by tally.
type counts struct {
	live, gone          int // live, and counted as being deleted
	marked              int // live, not fixed, marked for deletion
	avail, serving      int // live and available, and live that may serve
	onNew, newAvail     int // live on the wanted revision, and those available
	coming              int // live on the wanted revision by their own, not yet available (comes)
	old, oldCandidates  int // live on older revisions, and those not fixed
	candidates, protect int // live and not fixed, and fixed
}

// zoneTally counts one listed zone's known replicas as the pass plans:
// victims chosen leave it, creates placed arrive.
type zoneTally struct {
	live   int // live replicas
	free   int // live replicas the rules may choose (not fixed)
	occ    int // live replicas and those counted as being deleted
	old    int // live, not fixed, on older revisions, not yet chosen
	onNew  int // live on the wanted revision
	coming int // coming up (comes)
}

// comes reports whether a replica of flags f is coming up: live, made on
// the wanted revision (fNotMade), and not yet available. Such a replica
// is a replacement on its way, for the surge and the zone picker alike.
func comes(f flags) bool { return f&(fLive|fNew|fAvail|fNotMade) == fLive|fNew }

// pass is one call of Compute: its input, what it decided of each
// replica, the one budget every action spends, and the plan it builds.
type pass struct {
	spec   *Spec
	cur    []Replica
	policy Ranker
	env    Env
	w      *scratch

	lazy   bool     // readiness not read yet: no zones, and no rollout found (readiness)
	fl     []flags  // by index into cur
	zoneOf []int32  // by index into cur: its index into zones, or -1; nil without zones
	zones  []string // the listed zones that answer
	off    []bool   // by zone: backing off (backingOff)
	allOff bool     // every zone backs off
	z      []zoneTally
	strays int // live, unfixed replicas on older revisions in no listed zone

	desired int    // the known replicas' desired count (Desired, or K)
	lim     Limits // Strategy resolved for desired
	limit   int    // the per-pass cap
	counts

	// budget is how many available replicas the pass may still take out
	// of service: available − (desired − Unavailable), never below zero;
	// serveBudget the same of the replicas that may serve. Deletions,
	// preparations and power cycles all spend them.
	budget, serveBudget int
	heldServing         bool // a replica that may serve was kept for serveBudget alone

	deletes  int   // deletions planned, replaced replicas included, for the cap
	chosen   []int // the replicas chosen to leave, in order (choose)
	replaced []int // remediated or failed replicas, replaced in this pass
	unlisted int   // live replicas in no listed zone

	rebalanceHeld int    // deletes Spec.Rebalance holds back
	restart       []int  // replicas to restart
	update        int    // the zone a ZoneByZone rollout updates, or -1
	healHolds     []Hold // what holds replicas due for remediation, or failed ones (remediate)

	unknowns                   int // unknown replicas: unreachable, or in an unreachable zone
	unknownCounted, unknownOld int // unknown replicas that count toward Desired; those on older revisions
	fallback                   []Fallback
	inPlaceOnly                bool  // UpdateInPlaceOnly: the rules replace nothing for its revision
	updates                    []int // replicas updated in place
	moved                      int   // replicas moved onto the wanted revision in place (updated or waiting)
	back, cancelUpdate         []int // taken back from preparing: to leave, and for an update

	p Plan
}

// newPass returns a pass over current, classified (classify).
func newPass(spec *Spec, current []Replica, policy Ranker, now time.Time, w *scratch) *pass {
	ps := &pass{spec: spec, cur: current, policy: policy, w: w, update: -1,
		env: Env{Now: now, MinReady: spec.MinReady, Seed: spec.Seed}, limit: spec.maxPerPass()}
	ps.classify()
	return ps
}

// unknown reports whether r's state is unknown: the replica is
// unreachable, or its zone is.
func (ps *pass) unknown(r *Replica) bool {
	return r.Unreachable || len(ps.spec.Unreachable) > 0 && slices.Contains(ps.spec.Unreachable, r.Zone)
}

// classify decides, once, the state of each replica (flags) and the
// pass's counts, desired count and limits.
func (ps *pass) classify() {
	spec, cur := ps.spec, ps.cur
	gated := spec.Lifecycle != nil
	for _, z := range spec.Zones {
		if !slices.Contains(spec.Unreachable, z) {
			ps.zones = append(ps.zones, z)
		}
	}
	ps.desired = spec.Desired
	for i := range cur {
		if r := &cur[i]; ps.unknown(r) {
			ps.unknowns++
			if !r.Deleting || !spec.ReplaceDeleting {
				ps.unknownCounted++
			}
		}
	}
	if ps.unknownCounted > 0 {
		// Known replicas stand in for unknown ones, at most a surge's worth.
		surge := spec.Strategy.Limits(spec.Desired).Surge
		ps.desired = max(0, spec.Desired-ps.unknownCounted) + min(ps.unknownCounted, surge, spec.Desired)
	}
	ps.lim = spec.Strategy.Limits(ps.desired)
	ps.lazy = len(ps.zones) == 0
	ps.fl = ps.w.flagsFor(len(cur))
	if len(ps.zones) > 0 {
		ps.zoneOf = ps.w.int32s(intsZones, len(cur))
		ps.z = make([]zoneTally, len(ps.zones))
		ps.off, ps.allOff = backingOff(ps.zones, spec.History.ZoneBackoff, ps.env.Now)
		zoneIndex(&ps.w.zoneKeys, ps.zones)
	}
	var leaving []int
	lazyUntil := len(cur) // the replicas before it were classified lazily
	for i := range cur {
		r := &cur[i]
		if ps.zoneOf != nil {
			ps.zoneOf[i] = int32(zoneIndexOf(&ps.w.zoneKeys, ps.zones, r.Zone)) // -1 for an unreachable zone
		}
		if ps.unknowns > 0 && ps.unknown(r) {
			ps.fl[i] = fUnknown
			ps.p.Unknown = append(ps.p.Unknown, *r)
			if !r.Deleting && spec.Revision != "" && !onRevision(spec.Revision, r) {
				ps.unknownOld++
			}
			if gated && r.Preparing != nil && !r.Deleting {
				ps.p.Lifecycle.Preparing++ // left alone, preparing, while its zone is cut off
			}
			continue
		}
		var f flags
		switch {
		case r.Deleting:
			f = fGone
			ps.p.Deleting = append(ps.p.Deleting, *r)
		case r.Preparing == nil:
			f = fLive
		case !gated:
			// The spec dropped its Lifecycle while the replica prepared:
			// taken back, so that the record goes and a Lifecycle set
			// again never counts it as a preparation long under way.
			f = fLive | fBack
			ps.back = append(ps.back, i)
		case r.Preparing.Update && ps.stillUpdates(r):
			f = fLive | fCycling | fNotMade // the power cycle it prepares for, under way
		case r.Preparing.Update:
			// Rolled back, paused, another method, or no longer in place:
			// taken back in this pass, whatever the rules would choose
			// (its hooks were told it comes back); a later pass may
			// choose it to leave, and it prepares again, for that.
			f = fLive | fFixed | fBack
			ps.cancelUpdate = append(ps.cancelUpdate, i)
		case r.Protected:
			f = fLive | fBack // the rules would never have chosen it
			ps.back = append(ps.back, i)
		default:
			f = fGone | fLeaving
			leaving = append(leaving, i)
		}
		if r.Protected {
			f |= fFixed
		}
		if r.MarkedForDeletion {
			f |= fMarked
		}
		if f&fCycling != 0 || onRevision(spec.Revision, r) {
			f |= fNew
			if spec.Revision != "" && r.Revision == "" {
				f |= fNotMade
			}
		} else if ps.lazy && f&fLive != 0 {
			// A rollout is in progress: its budget needs readiness, of
			// this replica on and of those before it (readiness).
			ps.lazy, lazyUntil = false, i
		}
		if !ps.lazy {
			f = ps.readyFlags(r, f)
		}
		ps.fl[i] = f
		if ps.zoneOf != nil {
			ps.tallyZone(i, f, 1)
		}
	}
	if !ps.lazy && lazyUntil < len(cur) {
		ps.readiness(lazyUntil)
	}
	ps.countAll()
	sortByIdentity(ps.p.Deleting)
	sortByIdentity(ps.p.Unknown)
	slices.SortFunc(ps.back, ps.byIdentity)
	slices.SortFunc(ps.cancelUpdate, ps.byIdentity)
	ps.takeBack(leaving)
}

// byIdentity orders indexes into current by their replicas' identity.
func (ps *pass) byIdentity(a, b int) int { return compareIdentity(&ps.cur[a], &ps.cur[b]) }

// readyFlags returns f with the flags of r's readiness: broken (not
// provisioned, or failed), available (a power cycle under way is not),
// and may serve: available, or on an older revision and neither broken
// nor seen to be anything but running. A VM whose guest agent is late or
// whose readiness the binding failed to observe serves while it looks
// unavailable; a replica on the wanted revision that was never available
// has served nothing yet.
func (ps *pass) readyFlags(r *Replica, f flags) flags {
	if skipsGate(r) {
		f |= fBroken
	}
	avail := f&fCycling == 0 && available(r, ps.env.MinReady, ps.env.Now)
	if avail {
		f |= fAvail
	}
	if avail || f&(fNew|fBroken) == 0 {
		f |= fServe
	}
	return f
}

// readiness reads the readiness of the first n replicas, which a pass
// without zones classifies without it (lazy) until it finds a rollout in
// progress: a set at rest reads no more of each replica than its state,
// and ranks the candidates of a scale-down by their readiness as it ranks
// them (tierOf). The counts are made after it (countAll).
func (ps *pass) readiness(n int) {
	for i, f := range ps.fl[:n] {
		if f&(fLive|fGone) != 0 {
			ps.fl[i] = ps.readyFlags(&ps.cur[i], f)
		}
	}
}

// tally adds (d = 1) or removes (d = −1) current[i] to or from the
// pass's counts, as its flags say.
func (ps *pass) tally(i, d int) {
	ps.tallyFlags(ps.fl[i], d)
	if ps.zoneOf != nil {
		ps.tallyZone(i, ps.fl[i], d)
	}
}

// tallyFlags counts d replicas of flags f: as being deleted, or live.
func (ps *pass) tallyFlags(f flags, d int) {
	c := &ps.counts
	switch {
	case f&fGone != 0:
		c.gone += d
		return
	case f&fLive == 0:
		return
	}
	c.live += d
	avail := f&fAvail != 0
	if avail {
		c.avail += d
	}
	if f&fServe != 0 {
		c.serving += d
	}
	fixed := f&fFixed != 0
	if fixed {
		c.protect += d
	} else {
		c.candidates += d
		if f&fMarked != 0 {
			c.marked += d
		}
	}
	if f&fNew != 0 {
		c.onNew += d
		if avail {
			c.newAvail += d
		}
		if comes(f) {
			c.coming += d
		}
		return
	}
	c.old += d
	if !fixed {
		c.oldCandidates += d
	}
}

// tallyZone counts current[i], of flags f, in its zone.
func (ps *pass) tallyZone(i int, f flags, d int) {
	z := int(ps.zoneOf[i])
	fixed, onNew := f&fFixed != 0, f&fNew != 0
	switch {
	case f&(fLive|fGone) == 0:
	case z < 0 && f&fLive != 0:
		ps.unlisted += d
		if !onNew && !fixed {
			ps.strays += d
		}
	case z < 0:
	case f&fGone != 0:
		ps.z[z].occ += d
	default:
		t := &ps.z[z]
		t.live += d
		t.occ += d
		if !fixed {
			t.free += d
		}
		switch {
		case onNew:
			t.onNew += d
			if comes(f) {
				t.coming += d
			}
		case !fixed:
			t.old += d
		}
	}
}

// countAll makes the counts from every replica's flags at once: a
// histogram of the flags that count, then each bucket's count added as
// tally would one replica's. The classifying loop only stores flags.
func (ps *pass) countAll() {
	var h [counted + 1]int32
	for _, f := range ps.fl[:len(ps.cur)] {
		h[f&counted]++
	}
	for f, n := range h {
		if n > 0 {
			ps.tallyFlags(flags(f), int(n))
		}
	}
}

// set changes current[i]'s flags, keeping the counts.
func (ps *pass) set(i int, f flags) {
	ps.tally(i, -1)
	ps.fl[i] = f
	ps.tally(i, 1)
}

// inRollout reports whether a rollout is in progress, by the package
// documentation's one definition (One pass): some live known replica is
// on an older revision, one this pass moves onto the wanted revision in
// place included. Its budget then holds through the pass, and Rebalance
// waits.
func (ps *pass) inRollout() bool { return ps.old+ps.moved > 0 }

// beyondPartition reports whether more of those replicas than the
// partition remain, counted as inRollout counts them: the rollout's surge
// bound holds, and its replacements are due.
func (ps *pass) beyondPartition() bool { return ps.old+ps.moved > ps.lim.Partition }

// zoned reports whether the pass places replicas in listed zones.
func (ps *pass) zoned() bool { return len(ps.zones) > 0 }

// zoneAt returns current[i]'s zone, or -1.
func (ps *pass) zoneAt(i int) int {
	if ps.zoneOf == nil {
		return -1
	}
	return int(ps.zoneOf[i])
}

// resolveBudget sets the one availability budget, once remediation has
// decided what leaves first.
func (ps *pass) resolveBudget() {
	floor := ps.desired - ps.lim.Unavailable
	ps.budget = max(0, ps.avail-floor)
	ps.serveBudget = max(0, ps.serving-floor)
}

// spend charges taking current[i] out of service (a deletion, a
// preparation, a power cycle) to the budgets and reports whether they
// allow it: an available replica costs one of each, one that may serve
// one of serveBudget, any other nothing.
func (ps *pass) spend(i int) bool {
	avail := ps.fl[i]&fAvail != 0
	ok := ps.afford(avail, ps.fl[i]&fServe != 0)
	ps.heldServing = ps.heldServing || !ok && !avail
	return ok
}

// afford charges taking a replica out of service to the budgets and
// reports whether they allow it: it costs one of each when it takes an
// available replica out (avail), one of serveBudget when it takes out
// one that may serve (serve), nothing else.
func (ps *pass) afford(avail, serve bool) bool {
	switch {
	case avail && (ps.budget == 0 || ps.serveBudget == 0), serve && ps.serveBudget == 0:
		return false
	case avail:
		ps.budget--
		ps.serveBudget--
	case serve:
		ps.serveBudget--
	}
	return true
}

// choose adds current[i] to the plan's deletions.
func (ps *pass) choose(i int) {
	ps.fl[i] |= fChosen
	ps.deletes++
	ps.chosen = append(ps.chosen, i)
	ps.tallyChosen(i, -1)
}

// unchoose takes current[i] back from the plan's deletions (choose);
// the caller removes it from pass.chosen.
func (ps *pass) unchoose(i int) {
	ps.fl[i] &^= fChosen
	ps.deletes--
	ps.tallyChosen(i, 1)
}

// tallyChosen counts current[i], chosen (d = −1) or taken back (d = 1),
// in its zone: a victim leaves the zone's live replicas, and still
// occupies it. Only replicas that are not fixed are chosen.
func (ps *pass) tallyChosen(i, d int) {
	if z := ps.zoneAt(i); z >= 0 {
		t := &ps.z[z]
		t.live += d
		t.free += d
		if ps.fl[i]&fNew != 0 {
			t.onNew += d
		} else {
			t.old += d
		}
	}
}

// hold records a Hold, its reason formatted as fmt.Sprintf does, or adds
// to the hold of its kind already recorded: one hold per bound, its
// reasons joined.
func (ps *pass) hold(by HoldKind, waiting int, format string, args ...any) {
	addHold(&ps.p, Hold{By: by, Waiting: waiting, Reason: fmt.Sprintf(format, args...)})
}

// addHold adds h to p's holds, or to the hold of its kind already there.
func addHold(p *Plan, h Hold) {
	for i := range p.Holds {
		if p.Holds[i].By == h.By {
			p.Holds[i].Waiting += h.Waiting
			p.Holds[i].Reason += "; " + h.Reason
			return
		}
	}
	p.Holds = append(p.Holds, h)
}

// onRevision reports whether r is on revision rev: its revision is rev or
// unknown, or rev is empty (a set without revisions).
func onRevision(rev string, r *Replica) bool {
	return rev == "" || r.Revision == "" || r.Revision == rev
}

// sortByIdentity sorts rs by name, then UID.
func sortByIdentity(rs []Replica) {
	slices.SortFunc(rs, func(a, b Replica) int { return compareIdentity(&a, &b) })
}
