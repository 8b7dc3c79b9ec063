// Command vcsimd serves govmomi's vCenter simulator, as internal/vcsim sets
// it up, in a process of its own, so that several processes (two
// vmset-managers electing a leader, a test watching vCenter) talk to one
// vCenter over the network, with TLS and credentials, as they would to a
// real one, and so that the simulator outlives any of them.
//
// It listens on a free loopback port, adds a third cluster (zones zone-a,
// zone-b and zone-c, one per cluster) and writes into -dir:
//
//	vsphere.env  the vmset-manager's environment (VSPHERE_URL, user name,
//	             CA file, password file, placement and VSPHERE_ZONES), in
//	             the form of examples/vmset/config/manager/vsphere.env
//	password     the password alone (mode 0600), for VSPHERE_PASSWORD_FILE
//	ca.pem       the certificate to verify the simulator's TLS with
//	govc.env     govc's settings (vcsim.ReadEnvFile reads them back)
//	control      the base URL of the control endpoint
//	vcenter/     one file per setting (url, username, password, ca.crt,
//	             placement), as vmset-manager's -vcenter reads a second
//	             vCenter from a mounted Secret
//
// -username and -password set the credentials it accepts, so that two
// simulators stand for two vCenters with credentials of their own.
//
// vsphere.env is written last and atomically: once it exists, the
// simulator answers. The simulator serves one call at a time (see
// vcsim.Serialized); -task-delay makes each clone, power-on and destroy
// take that long, so that a test can act while a set's VMs are being made
// or removed. With -fault-rate, calls of -fault-methods fail with
// that probability (vcsim.Faults); the control endpoint changes the rate
// while it runs:
//
//	PUT /faults?rate=0.2   set the probability (0 turns faults off)
//	GET /calls             calls served and faults injected, as JSON
//	PUT /refuse?method=CloneVM_Task&pool=/DC0/host/DC0_C2/Resources
//	                       refuse every call of method naming the resource
//	                       pool (a cluster's pool: its path and /Resources),
//	                       a zone outage
//	DELETE /refuse?...     lift that refusal
//
// SIGTERM or SIGINT stops it; its VMs exist nowhere else.
package main
