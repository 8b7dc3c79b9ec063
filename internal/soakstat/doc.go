// Package soakstat measures the processes of a soak test and judges whether
// anything they hold grows: `make soak` runs two vmset-manager processes
// and a vCenter simulator under random work for half an hour or more, and
// samples each manager every 30 seconds.
//
// A sample of one process reads its resident memory and open file
// descriptors from /proc ([ReadProc]) and scrapes its Prometheus endpoint
// ([Scrape]) for the Go heap, goroutines, the objects in its informer
// caches and the entries of the binding's expectations and zone backoff
// tables. A [Sampler] appends each value to a [Series] per process and
// quantity ([DefaultQuantities] lists what is sampled).
//
// [Check] judges one series: it fits a least-squares line to the second
// half of the run (the first half is warm-up: caches filling, connection
// pools and the heap reaching their working size) and fails the series
// when the line's rise over that half exceeds the series kind's
// [Tolerance] and is clearly more than noise. A leak, one object kept per
// reconcile or per request, grows linearly with the work done, so over a
// steady workload it shows as a steady slope; garbage collection's
// sawtooth, connection churn and a workload's ups and downs are bounded,
// and a bounded series has no lasting slope. [WriteTable] prints the
// verdicts and [WriteSVG] draws each quantity as a small chart, every
// process one line, so that a person sees the shape at a glance.
package soakstat
