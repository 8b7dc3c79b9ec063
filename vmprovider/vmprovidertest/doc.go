// Package vmprovidertest helps test VM providers and the code that uses
// them: Verify checks that a vmprovider.Provider keeps the interface's
// contract, and Fake is an in-memory provider that does.
package vmprovidertest
