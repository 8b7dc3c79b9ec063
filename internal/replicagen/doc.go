// Package replicagen holds pgregory.net/rapid generators of replica sets,
// specs and policies, shared by the property tests of the core packages.
package replicagen
