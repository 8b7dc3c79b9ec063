package main

import (
	"context"
	"testing"

	"github.com/replicakit/replicakit/internal/testcert"
	"github.com/replicakit/replicakit/internal/vcsimtest"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// clientPair makes a self-signed client certificate and returns it as the
// tls.crt and tls.key of a kubernetes.io/tls Secret, and its DER.
func clientPair(t testing.TB) (crt, key string, der []byte) {
	t.Helper()
	c := testcert.Client(t, "vmset-manager")
	crt, key = testcert.PEM(t, c)
	return crt, key, c.Certificate[0]
}

// TestParse_CertificateLogin: the operator logs in to a vCenter by client
// certificate as an extension, from flags (-vsphere-extension-key,
// -vsphere-client-cert-dir) and from a -vcenter directory holding
// extensionKey, tls.crt and tls.key in place of username and password;
// both configurations log in to a simulator that takes that certificate
// for that extension only. Password and certificate together are refused.
func TestParse_CertificateLogin(t *testing.T) {
	sim := vcsimtest.Start(t)
	if err := sim.StartTunnel(); err != nil {
		t.Fatal(err)
	}
	crt, key, der := clientPair(t)
	const ext = "io.replicakit.vmset"
	if err := sim.SetExtensionCertificate(ext, der); err != nil {
		t.Fatal(err)
	}
	certs := vcenterDir(t, map[string]string{"tls.crt": crt, "tls.key": key})
	west := vcenterDir(t, map[string]string{"url": sim.URL, "extensionKey": ext, "ca.crt": string(sim.CA), "tls.crt": crt, "tls.key": key})
	caFile := vcenterDir(t, map[string]string{"ca.crt": string(sim.CA)}) + "/ca.crt"
	env := map[string]string{"VSPHERE_URL": sim.URL, "VSPHERE_EXTENSION_KEY": ext}
	o, ok := parseCase(t, []string{"-vsphere-client-cert-dir=" + certs, "-vsphere-ca-file=" + caFile, "-vcenter=west=" + west}, env, "")
	if !ok {
		t.Fatal("parse failed")
	}
	ctx := context.Background()
	for name, c := range map[string]vsphere.Config{"-vsphere-url": o.vsphere, "west": o.vcenters["west"]} {
		c.Datacenter, c.Folder, c.ResourcePool, c.Datastore, c.Template = "DC0", "/DC0/vm", "/DC0/host/DC0_C1", "LocalDS_0", "DC0_H0_VM0"
		p, err := vsphere.New(ctx, c)
		if err != nil {
			t.Errorf("%s: log in by certificate: %v", name, err)
			continue
		}
		_ = p.Close(ctx)
	}

	parseCase(t, []string{"-vsphere-client-cert-dir=" + certs, "-vsphere-username=u"}, map[string]string{"VSPHERE_URL": sim.URL, "VSPHERE_EXTENSION_KEY": ext, "VSPHERE_PASSWORD": "p"}, "not both")
	parseCase(t, []string{"-vsphere-extension-key=" + ext}, map[string]string{"VSPHERE_URL": sim.URL}, "go together")
	both := vcenterDir(t, map[string]string{"url": sim.URL, "extensionKey": ext, "password": "p", "tls.crt": crt, "tls.key": key})
	parseCase(t, []string{"-vcsim", "-vcenter=west=" + both}, nil, "not both")
	noKey := vcenterDir(t, map[string]string{"url": sim.URL, "extensionKey": ext, "tls.crt": crt})
	parseCase(t, []string{"-vcsim", "-vcenter=west=" + noKey}, nil, "tls.key")
	otherCrt, _, _ := clientPair(t)
	mismatched := vcenterDir(t, map[string]string{"url": sim.URL, "extensionKey": ext, "tls.crt": otherCrt, "tls.key": key})
	parseCase(t, []string{"-vcsim", "-vcenter=west=" + mismatched}, nil, "does not match")
	parseCase(t, []string{"-vsphere-client-cert-dir=" + vcenterDir(t, map[string]string{"tls.crt": otherCrt, "tls.key": key})},
		map[string]string{"VSPHERE_URL": sim.URL, "VSPHERE_EXTENSION_KEY": ext}, "does not match")
}
