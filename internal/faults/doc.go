// Package faults makes a controller-runtime manager misbehave the way a busy
// API server and a lagging cache do. An Injector fails creates, deletes,
// patches and status patches some of the time with a conflict, an internal
// error or a timeout (ctrl.Options.NewClient = faults.NewClient(in.Funcs()));
// a Lag delays the informers' watch streams so the cache serves older
// objects and catches up later (ctrl.Options.NewCache = lag.NewCache()).
// Both count what they injected.
package faults
