package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replicakit/replicakit/vmprovider"
)

// TestParse_Zones covers where zone placements come from: -zone flags,
// $VSPHERE_ZONES (flags win), the simulator's defaults, and the entries
// refused before anything starts.
func TestParse_Zones(t *testing.T) {
	real := map[string]string{"VSPHERE_URL": "https://vc/sdk", "VSPHERE_USERNAME": "u", "VSPHERE_PASSWORD": "p"}
	with := func(k, v string) map[string]string {
		m := map[string]string{k: v}
		for k, v := range real {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    map[string]vmprovider.Placement
		wantErr string
	}{
		{name: "none", env: real},
		{name: "flags", env: real, args: []string{"-zone=a:resourcePool=/dc/host/c0,datastore=ds0", "-zone=b:cluster=/dc/host/c1,folder=/dc/vm/b"},
			want: map[string]vmprovider.Placement{"a": {ResourcePool: "/dc/host/c0", Datastore: "ds0"}, "b": {ResourcePool: "/dc/host/c1", Folder: "/dc/vm/b"}}},
		{name: "environment", env: with("VSPHERE_ZONES", "a:resourcePool=/dc/host/c0; b:resourcePool=/dc/host/c1\nc:resourcePool=/dc/host/c2"),
			want: map[string]vmprovider.Placement{"a": {ResourcePool: "/dc/host/c0"}, "b": {ResourcePool: "/dc/host/c1"}, "c": {ResourcePool: "/dc/host/c2"}}},
		{name: "flags win over the environment", env: with("VSPHERE_ZONES", "a:resourcePool=/env"), args: []string{"-zone=z:resourcePool=/flag"},
			want: map[string]vmprovider.Placement{"z": {ResourcePool: "/flag"}}},
		{name: "the simulator's defaults", args: []string{"-vcsim"}, want: simulatorZones()},
		{name: "the simulator with zones given", args: []string{"-vcsim", "-zone=only:resourcePool=/DC0/host/DC0_C0"},
			want: map[string]vmprovider.Placement{"only": {ResourcePool: "/DC0/host/DC0_C0"}}},
		{name: "no name", env: real, args: []string{"-zone=resourcePool=/x"}, wantErr: "want NAME:resourcePool"},
		{name: "a name no label can hold", env: real, args: []string{"-zone=zone a:resourcePool=/x"}, wantErr: `zone name "zone a"`},
		{name: "no pool", env: real, args: []string{"-zone=a:datastore=ds"}, wantErr: "no resourcePool"},
		{name: "unknown key", env: real, args: []string{"-zone=a:resourcePool=/x,host=h"}, wantErr: `unknown key "host"`},
		{name: "a key twice", env: real, args: []string{"-zone=a:resourcePool=/x,cluster=/y"}, wantErr: "given twice"},
		{name: "a zone twice", env: real, args: []string{"-zone=a:resourcePool=/x", "-zone=a:resourcePool=/y"}, wantErr: `zone "a" given twice`},
		{name: "a bad environment", env: with("VSPHERE_ZONES", "a:resourcePool"), wantErr: "$VSPHERE_ZONES"},
		{name: "no backoff", env: real, args: []string{"-zone-backoff=0s"}, wantErr: "-zone-backoff 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := parseCase(t, tt.args, tt.env, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, o.zones); diff != "" {
				t.Errorf("zones (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFormatZones: what the manager logs reads back as the same zones.
func TestFormatZones(t *testing.T) {
	zones := map[string]vmprovider.Placement{
		"b": {ResourcePool: "/dc/host/c1", Folder: "/dc/vm/b", Datastore: "ds1"},
		"a": {ResourcePool: "/dc/host/c0"},
	}
	s := formatZones(zones)
	if want := "a:resourcePool=/dc/host/c0;b:resourcePool=/dc/host/c1,folder=/dc/vm/b,datastore=ds1"; s != want {
		t.Errorf("formatZones = %q, want %q", s, want)
	}
	back, err := parseZones(s)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(zones, back); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
