// Package faults makes a controller-runtime manager misbehave the way a busy
// API server and a lagging cache do. An Injector fails creates, deletes,
// patches and status patches some of the time with a conflict, an internal
// error or a timeout (ctrl.Options.NewClient = faults.NewClient(in.Funcs()));
// a Lag delays the informers' watch streams so the cache serves older
// objects and catches up later (ctrl.Options.NewCache = lag.NewCache()).
// Both count what they injected.
//
// A Proxy reaches what those cannot, such as operators running as separate
// processes: a TLS reverse proxy in front of the API server, started by the
// test (NewProxy), whose kubeconfig (Proxy.Kubeconfig) the processes are
// given. Following its Rules, it answers some requests itself, without
// forwarding them: 429 Too Many Requests with Retry-After, as API priority
// and fairness sheds load, 500 internal errors and server timeouts, and 409
// conflicts. It forwards everything else, watches included, and records how
// long each client took to send a request again after a Retry-After
// (Proxy.RetryGaps), so a test can check that clients honour it rather than
// retry at once.
package faults
