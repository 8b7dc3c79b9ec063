package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/replicakit/replicakit/internal/vcsim"
	"github.com/replicakit/replicakit/vmprovider"
)

// zoneFlag collects -zone flags, each one zone's placement:
//
//	NAME:resourcePool=PATH[,folder=PATH][,datastore=NAME][,vcenter=NAME]
//
// vcenter names the vCenter (-vcenter) the zone's placement is in; none
// means the -vsphere-url one. $VSPHERE_ZONES holds the same entries
// separated by ';' or newlines.
type zoneFlag struct {
	zones map[string]vmprovider.Placement
}

// String implements flag.Value.
func (z *zoneFlag) String() string {
	if z == nil || len(z.zones) == 0 {
		return ""
	}
	return formatZones(z.zones)
}

// Set implements flag.Value: one entry per -zone.
func (z *zoneFlag) Set(entry string) error {
	name, pl, err := parseZone(entry)
	if err != nil {
		return err
	}
	if z.zones == nil {
		z.zones = map[string]vmprovider.Placement{}
	}
	if _, dup := z.zones[name]; dup {
		return fmt.Errorf("zone %q given twice", name)
	}
	z.zones[name] = pl
	return nil
}

// parseZones reads $VSPHERE_ZONES: entries separated by ';' or newlines.
func parseZones(s string) (map[string]vmprovider.Placement, error) {
	var z zoneFlag
	for _, entry := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == '\n' }) {
		if entry = strings.TrimSpace(entry); entry == "" {
			continue
		}
		if err := z.Set(entry); err != nil {
			return nil, err
		}
	}
	return z.zones, nil
}

// parseZone reads one NAME:key=value,... entry. An entry holding ';' or a
// newline, which separate $VSPHERE_ZONES's entries, is an error: as one
// -zone it would give one zone whose last value swallows the others.
func parseZone(entry string) (string, vmprovider.Placement, error) {
	var pl vmprovider.Placement
	if strings.ContainsAny(entry, ";\n") {
		return "", pl, fmt.Errorf("zone %q: one entry per -zone (';' and newlines separate $VSPHERE_ZONES's entries)", entry)
	}
	name, rest, ok := strings.Cut(entry, ":")
	if !ok {
		return "", pl, fmt.Errorf("zone %q: want NAME:resourcePool=PATH[,folder=PATH][,datastore=NAME][,vcenter=NAME]", entry)
	}
	if errs := validation.IsValidLabelValue(name); name == "" || len(errs) > 0 {
		return "", pl, fmt.Errorf("zone name %q: want a label value (letters, digits, '-', '_', '.'; at most 63)", name)
	}
	for _, kv := range strings.Split(rest, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || v == "" {
			return "", pl, fmt.Errorf("zone %s: %q: want key=value (resourcePool, folder, datastore or vcenter)", name, kv)
		}
		var field *string
		switch k {
		case "resourcePool", "cluster":
			field = &pl.ResourcePool
		case "folder":
			field = &pl.Folder
		case "datastore":
			field = &pl.Datastore
		case "vcenter":
			field = &pl.Endpoint
		default:
			return "", pl, fmt.Errorf("zone %s: unknown key %q: want resourcePool (or cluster), folder, datastore or vcenter", name, k)
		}
		if *field != "" {
			return "", pl, fmt.Errorf("zone %s: %s given twice", name, k)
		}
		*field = v
	}
	if pl.ResourcePool == "" {
		return "", pl, fmt.Errorf("zone %s: no resourcePool: a zone is a cluster or resource pool", name)
	}
	return name, pl, nil
}

// formatZones writes zones back as $VSPHERE_ZONES, by name.
func formatZones(zones map[string]vmprovider.Placement) string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(zones)) {
		pl := zones[name]
		e := name + ":resourcePool=" + pl.ResourcePool
		if pl.Folder != "" {
			e += ",folder=" + pl.Folder
		}
		if pl.Datastore != "" {
			e += ",datastore=" + pl.Datastore
		}
		if pl.Endpoint != "" {
			e += ",vcenter=" + pl.Endpoint
		}
		out = append(out, e)
	}
	return strings.Join(out, ";")
}

// simulatorZones are the embedded simulator's zones when none are given:
// one per cluster (the manager adds vcsim.ThirdCluster to the model's two).
func simulatorZones() map[string]vmprovider.Placement { return vcsim.Zones() }
