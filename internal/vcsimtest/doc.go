// Package vcsimtest starts govmomi's in-process vCenter simulator for a test
// (see package vcsim) and stops it when the test ends.
package vcsimtest
