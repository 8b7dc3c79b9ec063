// Package replicasettest draws inputs of replicaset.Compute with every
// feature on at once, and checks a plan against every per-pass invariant
// the replicaset package documents, for importers' own tests (of a
// binding, of a deletion policy, of a wrapper around Compute), as
// deletionpolicytest does for policies.
//
// Spec draws a valid replicaset.Spec with every field drawn independently
// (zones, backoffs, unreachable zones, revisions and any Strategy,
// Remediation, Lifecycle, the remediation history); Replicas draws
// replicas in every state at once (being deleted, marked, protected, each
// phase, ready or not, launch gated, on older revisions, in zones listed,
// unlisted or unreachable, with health, preparing with hooks, each
// in-place kind); Inputs draws both with the time of the pass (Now).
// Check judges one plan against its input, stating each invariant once:
//
//	func TestMyPolicy_Compute(t *testing.T) {
//		rapid.Check(t, func(t *rapid.T) {
//			in := replicasettest.Inputs().Draw(t, "input")
//			plan, err := replicaset.Compute(in.Spec, in.Replicas, MyPolicy{}, in.Now)
//			if err != nil {
//				t.Fatal(err)
//			}
//			if err := replicasettest.Check(in, plan); err != nil {
//				t.Fatal(err)
//			}
//		})
//	}
//
// A world that carries plans out pass after pass can run Check on every
// pass, with Now its own clock.
package replicasettest
