// Package widgetkind reads and writes the test Widget kind (testenv.WidgetCRD)
// for adapters of replicakit's binding: its spec, its status and its
// constructors. Each adapter adds only what depends on its child kind (the
// binding's tests own ConfigMaps, the end-to-end benchmark Pods).
package widgetkind
