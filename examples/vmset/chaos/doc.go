// Package chaos is the example operator's chaos suite; it holds only tests.
//
// Each scenario runs the operator (both controllers, in process) against
// the real API server with the garbage collector and an in-process vCenter
// simulator, and scales a VirtualMachineReplicaSet through repeated 0→N→0
// cycles while something goes wrong: API writes failing (409, 500,
// timeouts) and lists lagging, vCenter clone, power-on and destroy tasks
// failing, the operator restarted in the middle of a scale-up and a
// scale-down, or foreign objects and VMs with colliding names and labels.
// After every step it requires exact convergence on both sides, and at the
// end 0 duplicate and 0 leaked vSphere VMs, 0 foreign objects changed, and
// never more children than desired. Two scenarios spread a set over three
// zones: one while a zone refuses clones, and one rolling a set from one
// template to another and back through all of the above, where an
// independent watch of the API server checks every change against the
// bounds of the set's strategy (rollwatch). Four more run a set that heals
// (spec.remediation) through a blip that makes most VMs unhealthy, a
// vCenter partition, VMs hung in the middle of a rollout and a template
// whose VMs never become healthy, counting the resets, clones and
// destroys vCenter sees against what the healing rules allow. Four more
// run a set with a pre-delete hook (spec.lifecycle) beside a drainer of
// the test's own: a drainer that crashed (the hook's timeout with
// Continue, then Abandon), releases in random order through a rollout
// with remediation, the set deleted while its VMs drain, and the
// operator restarted while they prepare; a gate checker, a watch of its
// own, checks that every VM deleted had prepared and was released or
// timed out first. One more rolls a set's memory in place
// (spec.strategy.method) live and by power cycles, under InPlaceIfPossible
// and InPlaceOnly, while vCenter refuses reconfigures (one VM for good,
// every VM of a zone, some at random) and the operator restarts with a
// reconfigure in flight; a watch of its own and a poll of vCenter check
// at every read that no VM is recorded on a revision whose memory vCenter
// does not show. It prints a table of the runs.
//
// `make test` runs one small scenario of each kind; `make chaos` runs
// every scenario at full size (REPLICAKIT_CHAOS=large). Each scenario
// seeds its random faults from REPLICAKIT_CHAOS_SEED when set, and every
// failure message gives the seed and the command that replays it.
package chaos
