// Package kubetest helps importers test their own operators built on
// package kube, at two depths.
//
// # Unit tests on a fake client
//
// A unit test runs one pass at a time on controller-runtime's fake client,
// with no API server: [NewFakeClient] builds the client with the field
// indexes the Reconciler reads through (SetupWithManager registers them
// with a manager's cache; a fake client must hold them from the start) and
// hands it to the Reconciler, whose Reconcile the test then calls itself.
// That is where an Adapter's Spec, NewChild, Describe and SetStatus, the
// deletion order and the owner's conditions are checked pass by pass. The
// example for NewFakeClient is a whole test file: a Pool kind of Pods, its
// Adapter and its Reconciler, then the passes.
//
// The fake client is not an API server, and a test should know where:
//   - It applies writes at once, so each pass sees the last one's.
//   - It runs no kubelet and no garbage collector: the test sets a child's
//     status itself (MarkPodReady for Pods; c.Status().Update works for
//     other children too) to make it running and ready, and deleting an
//     owner deletes none of its children.
//   - NewFakeClient gives created objects a UID, a creation timestamp and
//     generation 1, but updates never raise the generation, so a test of
//     ObservedGeneration sets the owner's generation itself.
//   - It knows no CRD: no schema validation and no defaults. A status
//     field that the CRD must default (see kube.Adapter.SetStatus) passes
//     here and fails on a real API server.
//
// # Integration tests on envtest
//
// An integration test runs the Reconciler as the operator will: in a
// manager, through SetupWithManager, on a real kube-apiserver and etcd that
// controller-runtime's envtest starts from the folder KUBEBUILDER_ASSETS
// names, with the CRDs controller-gen writes for the owner kind. Example
// (Envtest) is such a test's set-up, and this package's
// TestPoolOnAPIServer runs the same set-up on every change.
//
// # What every such test writes
//
// No kubelet runs there either. [MarkPodReady] and [MarkPodsReady] play
// it: they make Pods Running and Ready through the status subresource, on
// an API server or a fake client, when the test says, so that a rollout or
// a readiness check waits for moments the test makes instead of racing
// them. [WatchBounds] watches an owner's children independently of the
// Reconciler and records the most that lived at once, counting those being
// deleted, and the fewest that were ready ([Bounds]): what a rollout's
// MaxSurge and MaxUnavailable promise.
//
// A test of pre-delete hooks (kube.Spec.Lifecycle) needs running children:
// a child that never ran has nothing to drain, so one the Adapter
// describes as replicaset.PhasePending (a Pod no MarkPodReady has made
// Running, with an Adapter that maps the Pod's phase) is deleted without
// waiting on its hooks, and a hook test that forgets to play the kubelet
// sees no hook hold anything.
package kubetest
