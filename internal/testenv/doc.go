// Package testenv starts a real Kubernetes control plane for tests and the
// demo: etcd and kube-apiserver through controller-runtime's envtest, and
// kube-controller-manager running the garbage collector and the namespace
// controller, all from the binaries `make tools` builds into bin/.
//
// Start it once per test binary, from TestMain:
//
//	var env *testenv.Env
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env, testenv.Options{}) }
//
//	func TestSomething(t *testing.T) {
//		e := env.Require(t) // skips, or fails under REPLICAKIT_REQUIRE_ENVTEST=1
//		...
//	}
//
// When the binaries are missing, tests that call Require skip with a message
// saying `make tools`; when REPLICAKIT_REQUIRE_ENVTEST=1 is set (as in CI),
// a missing binary or a failed start fails the test binary instead.
package testenv
