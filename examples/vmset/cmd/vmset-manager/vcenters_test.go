package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider"
	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// vcenterDir writes a -vcenter directory holding files.
func vcenterDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, v := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestParse_VCenters covers vCenters besides the -vsphere-url one: read
// from a directory per vCenter (a mounted Secret), named by zones, and
// the command lines refused.
func TestParse_VCenters(t *testing.T) {
	west := vcenterDir(t, map[string]string{
		"url": "https://west.example.com/sdk\n", "username": "west-user\n", "password": "west-pw\n",
		"ca.crt": "-----BEGIN CERTIFICATE-----\n", "datacenter": "dc-west", "template": "ubuntu",
	})
	noPassword := vcenterDir(t, map[string]string{"url": "https://x/sdk", "username": "u"})
	insecureAndCA := vcenterDir(t, map[string]string{"url": "https://x/sdk", "username": "u", "password": "p", "insecure": "true", "thumbprint": "AB:CD"})
	real := map[string]string{"VSPHERE_URL": "https://east.example.com/sdk", "VSPHERE_USERNAME": "east-user", "VSPHERE_PASSWORD": "east-pw"}
	zoneWest := "-zone=zone-w:resourcePool=/dc-west/host/C0,vcenter=west"
	zoneEast := "-zone=zone-e:resourcePool=/DC0/host/C0"
	tests := []struct {
		name      string
		args      []string
		env       map[string]string
		want      map[string]vsphere.Config
		wantZones map[string]vmprovider.Placement
		wantErr   string
	}{
		{name: "a second vCenter by flag, named by a zone", env: real, args: []string{"-vcenter=west=" + west, zoneWest, zoneEast, "-vsphere-max-tasks=3", "-vsphere-shutdown-grace=10s"},
			want: map[string]vsphere.Config{"west": {URL: "https://west.example.com/sdk", Username: "west-user", Password: "west-pw",
				CABundle: []byte("-----BEGIN CERTIFICATE-----\n"), Datacenter: "dc-west", Template: "ubuntu", MaxTasks: 3, ShutdownGrace: 10 * time.Second}},
			wantZones: map[string]vmprovider.Placement{"zone-w": {ResourcePool: "/dc-west/host/C0", Endpoint: "west"}, "zone-e": {ResourcePool: "/DC0/host/C0"}}},
		{name: "from $VSPHERE_VCENTERS", env: map[string]string{"VSPHERE_URL": real["VSPHERE_URL"], "VSPHERE_USERNAME": "u", "VSPHERE_PASSWORD": "p",
			"VSPHERE_VCENTERS": "west=" + west + ";", "VSPHERE_ZONES": "zone-w:resourcePool=/dc-west/host/C0,vcenter=west"},
			want: map[string]vsphere.Config{"west": {URL: "https://west.example.com/sdk", Username: "west-user", Password: "west-pw",
				CABundle: []byte("-----BEGIN CERTIFICATE-----\n"), Datacenter: "dc-west", Template: "ubuntu", MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: vsphere.DefaultShutdownGrace}},
			wantZones: map[string]vmprovider.Placement{"zone-w": {ResourcePool: "/dc-west/host/C0", Endpoint: "west"}}},
		{name: "a zone on a vCenter not given", env: real, args: []string{zoneWest}, wantErr: `vcenter "west" is not given`},
		{name: "a vCenter without its password", env: real, args: []string{"-vcenter=west=" + noPassword}, wantErr: "holds no password"},
		{name: "a vCenter both insecure and pinned", env: real, args: []string{"-vcenter=west=" + insecureAndCA}, wantErr: "choose one"},
		{name: "a vCenter directory that is not there", env: real, args: []string{"-vcenter=west=/nonexistent"}, wantErr: "holds no url, username, password"},
		{name: "a vCenter named default", env: real, args: []string{"-vcenter=default=" + west}, wantErr: "names the vCenter of -vsphere-url"},
		{name: "a vCenter name that is no DNS label", env: real, args: []string{"-vcenter=West_1=" + west}, wantErr: "want a DNS label"},
		{name: "a vCenter given twice", env: real, args: []string{"-vcenter=west=" + west, "-vcenter=west=" + west}, wantErr: "given twice"},
		{name: "a vCenter entry without a directory", env: real, args: []string{"-vcenter=west"}, wantErr: "want NAME=DIR"},
		{name: "a second vCenter beside the embedded simulator", args: []string{"-vcsim", "-vcenter=west=" + west, zoneWest},
			want: map[string]vsphere.Config{"west": {URL: "https://west.example.com/sdk", Username: "west-user", Password: "west-pw",
				CABundle: []byte("-----BEGIN CERTIFICATE-----\n"), Datacenter: "dc-west", Template: "ubuntu", MaxTasks: vsphere.DefaultMaxTasks, ShutdownGrace: vsphere.DefaultShutdownGrace}},
			wantZones: map[string]vmprovider.Placement{"zone-w": {ResourcePool: "/dc-west/host/C0", Endpoint: "west"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := parseCase(t, tt.args, tt.env, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, o.vcenters, ignoreCredentials); diff != "" {
				t.Errorf("vCenters (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantZones, o.zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}
