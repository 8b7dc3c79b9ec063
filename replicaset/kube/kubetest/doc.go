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
// The config envtest gives is an administrator's, whom RBAC never denies,
// so a manager built on it passes whatever the operator's kubebuilder RBAC
// markers forgot. [ServiceAccountConfig] gives one that authenticates as a
// service account bound to exactly the ClusterRoles and Roles of the
// manifests controller-gen writes (config/rbac/role.yaml): built on it,
// the manager runs the Reconciler with the rights the operator will have,
// and a missing marker (patch on the owner's own kind, which the binding
// needs for its finalizer and the owner's annotations) makes its requests
// fail with Forbidden in the test instead of in the cluster. The binding
// logs such a failure and retries, but goes on where it can, so the test
// must check what the request writes to see it: the owner's finalizer
// (kube.FinalizerDrain), its remediation history
// (kube.AnnotationRemediationHistory), its status. The test keeps the
// administrator's config for its own requests.
//
// # What every such test writes
//
// No kubelet runs there either. [MarkPodReady] and [MarkPodsReady] play
// it: they make Pods Running and Ready through the status subresource, on
// an API server or a fake client, when the test says, so that a rollout or
// a readiness check waits for moments the test makes instead of racing
// them. Healing and hook tests also need Pods that are not healthy, and
// four more functions play those, the same way, with the reasons and
// messages a kubelet (or the scheduler) writes: [MarkPodNotReady] a
// failing readiness probe, [MarkPodCrashLooping] one more crash of every
// container, [MarkPodPending] a Pod stuck Pending (unschedulable, or its
// containers waiting on an image pull or their configuration), and
// [MarkPodUpdated] the kubelet taking in an in-place change of image or
// resources. A later MarkPodReady plays the Pod recovering, and so does
// MarkPodsReady, which marks every Pod that is not ready: a test that
// keeps a fault while the other Pods become ready marks those one by one.
// [WatchBounds] watches an owner's children independently of the
// Reconciler and records the most that lived at once, counting those
// being deleted, and the fewest that were ready ([Bounds]): what a
// rollout's MaxSurge and MaxUnavailable promise.
//
// A test of pre-delete hooks (kube.Spec.Lifecycle) needs running children:
// a child that never ran has nothing to drain, so one the Adapter
// describes as replicaset.PhasePending (a Pod no MarkPodReady has made
// Running, with an Adapter that maps the Pod's phase) is deleted without
// waiting on its hooks, and a hook test that forgets to play the kubelet
// sees no hook hold anything.
package kubetest
