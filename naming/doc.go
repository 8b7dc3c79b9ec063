// Package naming makes replica names that are valid everywhere a replica's
// name is used: as a Kubernetes object name, in a label value, as a vSphere
// VM name and as a host name.
//
// Names are made on the client, before the create is sent, so that a create
// is idempotent by name: if a response is lost and the create is retried with
// the same name, the platform answers "already exists" instead of making a
// second replica.
//
// # Generators
//
// [Random] makes generateName-style names (test-rs-zmdmm) from an injected
// random source; [Indexed] makes ordinal names (web-0, web-1) and parses them
// back. Both cut the base so the whole name fits the [Target]'s limit
// (Kubernetes object name 253, label value 63, vSphere VM name 80) and never
// return a name that is already taken. A name made for the default target,
// [Portable], is valid as all of them; one made for a longer limit is valid
// wherever it fits.
//
// # Validation and labels
//
// [Validate] says what is wrong with a name for a target, character and
// position included. [LabelValueFor] turns any string, such as a
// 253-character owner name, into a valid label value, appending a hash when
// it has to shorten or change it.
package naming
