package deletionpolicytest_test

import (
	"fmt"

	"github.com/replicakit/replicakit/deletionpolicy"
	"github.com/replicakit/replicakit/deletionpolicy/deletionpolicytest"
	"github.com/replicakit/replicakit/replicaset"
)

// cheapestFirst is a policy of one's own: lowest deletion cost first, then
// the default tie-break by name.
type cheapestFirst struct{}

func (cheapestFirst) Rank(r replicaset.Replica, _ replicaset.Env) replicaset.Rank {
	return replicaset.Rank{r.DeletionCost}
}

func ExampleVerify() {
	var p deletionpolicy.Policy = cheapestFirst{}
	if err := deletionpolicytest.Verify(p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("cheapestFirst keeps the contract")
	// Output:
	// cheapestFirst keeps the contract
}
