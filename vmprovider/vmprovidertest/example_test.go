package vmprovidertest_test

import (
	"context"
	"fmt"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vmprovidertest"
)

// Run the conformance check from your own provider's tests; here against
// the Fake, which keeps the contract.
func ExampleVerify() {
	err := vmprovidertest.Verify(context.Background(), &vmprovidertest.Fake{}, vmprovider.Spec{Name: "conformance"})
	fmt.Println(err)
	// Output:
	// <nil>
}
