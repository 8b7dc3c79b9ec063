// Package deletionpolicytest checks that a deletion policy keeps the
// contract replicaset.Compute relies on. Run Verify from your own policy's
// tests:
//
//	func TestMyPolicy(t *testing.T) {
//		if err := deletionpolicytest.Verify(MyPolicy{}); err != nil {
//			t.Error(err)
//		}
//	}
package deletionpolicytest
