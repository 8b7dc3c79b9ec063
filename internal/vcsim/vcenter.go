package vcsim

import (
	"net/http"
	"regexp"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/types"
)

// What a real vCenter refuses that govmomi's simulator serves: the gate
// answers these calls with vCenter's fault before the simulator sees them.

// clonePool finds a clone's target resource pool (not a vApp, which
// nothing here clones into), and cloneHost its target host, in a
// CloneVM_Task request.
var (
	clonePool = regexp.MustCompile(`<pool type="ResourcePool">([^<]+)</pool>`)
	cloneHost = regexp.MustCompile(`<host type="HostSystem">[^<]+</host>`)
)

// refuses answers a call vCenter would refuse, and reports whether it
// did. The gate's lock is held.
//
// A clone into a resource pool of a cluster whose DRS is off, naming no
// host, fails with InvalidArgument for spec.pool: vSphere's API reference
// for VirtualMachineRelocateSpec.host says that with a resource pool
// specified "and the target pool represents a cluster without DRS
// enabled, an InvalidArgument exception [is] thrown". The simulator
// clones onto one of the cluster's hosts instead.
func (g *gate) refuses(w http.ResponseWriter, method string, body []byte) bool {
	if method != "CloneVM_Task" || cloneHost.Match(body) {
		return false
	}
	m := clonePool.FindSubmatch(body)
	if m == nil {
		return false
	}
	pool, ok := g.tasks.Get(types.ManagedObjectReference{Type: "ResourcePool", Value: string(m[1])}).(*simulator.ResourcePool)
	if !ok {
		return false
	}
	cluster, ok := g.tasks.Get(pool.Owner).(*simulator.ClusterComputeResource)
	if !ok {
		return false
	}
	cfg, ok := cluster.ConfigurationEx.(*types.ClusterConfigInfoEx)
	if !ok || cfg.DrsConfig.Enabled != nil && *cfg.DrsConfig.Enabled {
		return false
	}
	w.Header().Set("Content-Type", "text/xml; charset=utf-8")
	w.WriteHeader(http.StatusInternalServerError)
	_, _ = w.Write([]byte(invalidPoolFault))
	return true
}

// invalidPoolFault is vCenter's answer to a clone into a cluster without
// DRS that names no host.
const invalidPoolFault = `<?xml version="1.0" encoding="UTF-8"?>
<soapenv:Envelope xmlns:soapenc="http://schemas.xmlsoap.org/soap/encoding/" xmlns:soapenv="http://schemas.xmlsoap.org/soap/envelope/" xmlns:xsd="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<soapenv:Body><soapenv:Fault><faultcode>ServerFaultCode</faultcode><faultstring>A specified parameter was not correct: spec.pool</faultstring><detail><InvalidArgumentFault xmlns="urn:vim25" xsi:type="InvalidArgument"><invalidProperty>spec.pool</invalidProperty></InvalidArgumentFault></detail></soapenv:Fault></soapenv:Body></soapenv:Envelope>
`
