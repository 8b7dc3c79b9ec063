// Package reliability tests the example operator as it is deployed and as
// production treats it: two vmset-manager processes electing a leader on a
// real API server, and the vCenter simulator as a process of its own that
// both reach over TLS with credentials (examples/internal/procs).
//
// The leader is killed with SIGKILL at chosen moments (mid-clone,
// mid-destroy, mid-rollout, mid-adoption) and at random ones, and
// restarted as the new standby; the test measures the take-over, from the
// kill to the new leader's first reconcile and to convergence, reports it
// against controller-runtime's lease duration (15 s) plus its retry period
// (2 s) and holds it to client-go's own bound (with its jitter, 23.8 s),
// while an independent watch checks that no set ever has more VMs than its
// bounds allow, and at the end that nothing leaked or was made twice.
// kube-apiserver and etcd are restarted, each during a scale-up and a
// rollout. The soak (TestSoak, `make soak`) drives the same processes for
// half an hour or more and samples their resources.
//
// The package has only tests. `make test` runs the first moment of each
// (the leader killed mid-clone, kube-apiserver restarted mid-scale-up)
// and the soak for 90 s; `make reliability` runs every moment
// (REPLICAKIT_RELIABILITY=full). Random choices are seeded from
// REPLICAKIT_RELIABILITY_SEED when set.
package reliability
