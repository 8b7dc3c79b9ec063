package replicasettest

// tally counts the known replicas not remediated by the plan at one side
// of the pass: available, and may serve.
type tally struct{ avail, serving int }

// bounds checks the availability, serving and surge bounds of a rollout.
func (c *checker) bounds() {
	spec := &c.in.Spec
	gone := setOf(c.p.Delete)
	for _, l := range []list{{"Prepare", c.p.Prepare}, {"PrepareUpdate", c.p.PrepareUpdate}} {
		for _, r := range l.rs {
			gone[r.Name] = true
		}
	}
	live := map[string]bool{} // updated live, onto the wanted revision
	for _, u := range c.p.Update {
		gone[u.Replica.Name] = gone[u.Replica.Name] || u.PowerCycle
		live[u.Replica.Name] = !u.PowerCycle
	}
	// A replaced replica counts as gone on both sides; a restart takes
	// none out of the count (it is no deletion, and the replica stays).
	replaced := setOf(c.p.Replace)
	remediated := replaced
	var before, after tally
	known, olds := 0, 0
	var oldNames []string
	for i := range c.in.Replicas {
		r := &c.in.Replicas[i]
		if c.unknown[r.Name] {
			continue
		}
		known++
		preparing := c.lc != nil && r.Preparing != nil && !r.Deleting
		// Cancellations come first: a replica taken back is live again.
		leaving := r.Deleting || preparing && !r.Preparing.Update && !c.cancel[r.Name]
		cycling := preparing && r.Preparing.Update && !c.cancel[r.Name]
		isOld := !leaving && !cycling && old(spec, r)
		if isOld && !replaced[r.Name] { // a replica replaced leaves: no rollout waits on it
			olds++
			oldNames = append(oldNames, r.Name)
		}
		if remediated[r.Name] {
			continue
		}
		avail := r.Available(spec.MinReady, c.in.Now)
		if !leaving && !cycling {
			before.avail += b2i(avail)
			before.serving += b2i(avail || isOld && ran(r))
		}
		if !gone[r.Name] && !leaving && !cycling {
			after.avail += b2i(avail)
			after.serving += b2i(avail || isOld && !live[r.Name] && ran(r))
		}
	}
	if olds == 0 {
		return // no rollout in progress
	}
	floor := c.k - c.lim.Unavailable
	if f := min(before.avail, floor); after.avail < f {
		c.fail("availability", "available replicas %d → %d, below min(%d, K %d − U %d) (old: %v)",
			before.avail, after.avail, f, c.k, c.lim.Unavailable, oldNames)
	}
	if f := min(before.serving, floor); after.serving < f {
		c.fail("serving", "replicas that may serve %d → %d, below min(%d, K %d − U %d) (old: %v)",
			before.serving, after.serving, f, c.k, c.lim.Unavailable, oldNames)
	}
	if olds > c.lim.Partition {
		if got := known + c.p.Create; got > max(known, c.k+c.lim.Surge) {
			c.fail("surge", "%d known replicas (live, being deleted and preparing) + %d creates = %d, over max(%d, K %d + S %d) while %d on older revisions remain beyond partition %d",
				known, c.p.Create, got, known, c.k, c.lim.Surge, olds, c.lim.Partition)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
