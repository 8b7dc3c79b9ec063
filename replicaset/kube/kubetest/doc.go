// Package kubetest helps importers test their own operators built on
// package kube, at two depths.
//
// A unit test runs one pass at a time on controller-runtime's fake client,
// with no API server: [NewFakeClient] builds the client with the field
// indexes the Reconciler reads through (SetupWithManager registers them
// with a manager's cache; a fake client must hold them from the start) and
// hands it to the Reconciler, whose Reconcile the test then calls itself.
// The fake client applies writes at once, so each pass sees the last one's
// children; it runs no kubelet and no garbage collector, so the test marks
// children ready and removes deleted ones itself when its scenario needs
// it. That is where an Adapter's Spec, NewChild, Describe and SetStatus,
// and the owner's conditions, are checked pass by pass.
//
// An integration test runs the Reconciler as the operator will: in a
// manager, with SetupWithManager, on a real kube-apiserver and etcd started
// by controller-runtime's envtest, whose KUBEBUILDER_ASSETS names the
// folder that holds them. Nothing in this package is needed for that; the
// example for [NewFakeClient]'s neighbour, Example (envtest), shows the
// whole of it, and it is the test this project runs on its own
// binaries.
package kubetest
