// Command benche2e measures replicakit's controller-runtime binding end to
// end beside kube-controller-manager's ReplicaSet controller, on one real API
// server in one run, and prints the ratios (`make bench-e2e`).
//
// For each client limit (the defaults, 20 QPS and burst 30, then 1000/1000)
// it scales a Widget (the binding, Pod children) and a ReplicaSet
// (kube-controller-manager v1.37.2, --controllers=replicaset) from 0 to N
// Pods, back to 0, and to N again before deleting the owner for the garbage
// collector's cascade; beside them a raw loop creates N Pods from 16
// goroutines with no client limit. Pods need no kubelet: only the objects are
// made. Writes are counted from the API server's apiserver_request_total
// (events and status included). At 1000/1000 it runs eleven times (-runs),
// changing the order of the sides (six orders, each run's the reverse of
// the one before), and reports the median times and the
// median of the per-run ratios (sub-second runs on two cores swing from 0.7
// to 1.6 either way). It also counts the writes of a steady-state pass, and
// measures fleets of many owners in one namespace (-owners; -owners-only
// for those alone): time, controller CPU, and CPU in an idle window after,
// for creating every owner and for scaling every one to 0.
//
// The Widget is a custom resource, so its watch events and answers are
// JSON, where the ReplicaSet controller reads and writes protobuf. So that
// the binding is also compared like for like, it scales StatefulSets too (a
// built-in kind, protobuf, that no controller here manages), reported in
// rows of their own.
//
// Last it rolls 500 Pods to a new template under maxSurge and
// maxUnavailable 25% (-rollout-runs times; -rollout-only for that alone):
// the binding with rollouts on (StatefulSet and Widget owners, in a process
// of its own started with -serve-rollout) beside kube-controller-manager's
// Deployment controller (--controllers=deployment,replicaset). kwok
// (bin/kwok, built by `make tools-kwok`) plays the kubelet for one fake
// Node, making each Pod Running and Ready after -kwok-ready-delay and
// removing a Pod being deleted after -kwok-delete-delay. An independent
// watch counts the available and live Pods throughout: time, controller
// CPU, writes per replica and the fewest available Pods are reported.
//
// The VMs through the example operator are measured by the examples module's
// own benchmark (examples/internal/cmd/benchvms); `make bench-e2e` runs both.
//
// The binding runs in a process of its own, as kube-controller-manager
// does: the harness starts itself again with -serve-binding.
// -binding-cpuprofile writes that process's CPU profile.
package main
