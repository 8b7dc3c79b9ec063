package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const mod = "github.com/replicakit/replicakit"

func TestParseMessage(t *testing.T) {
	tests := []struct {
		msg  string
		want change
	}{{
		msg: "./deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry",
		want: change{
			Full:    mod + "/deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry",
			Package: mod + "/deletionpolicy",
			Key:     "deletionpolicy.Default",
		},
	}, {
		msg: "./replicaset/kube.Reconciler.Policies: changed from *deletionpolicy.Registry to deletionpolicy.Lookup",
		want: change{
			Full:    mod + "/replicaset/kube.Reconciler.Policies: changed from *deletionpolicy.Registry to deletionpolicy.Lookup",
			Package: mod + "/replicaset/kube",
			Key:     "kube.Reconciler.Policies",
		},
	}, {
		msg: "./replicaset/kube.Adapter.Observe: removed",
		want: change{
			Full:    mod + "/replicaset/kube.Adapter.Observe: removed",
			Package: mod + "/replicaset/kube",
			Key:     "kube.Adapter.Observe",
		},
	}, {
		msg: "./replicaset/kube.(*Reconciler[O, C]).SetupWithManager: removed",
		want: change{
			Full:    mod + "/replicaset/kube.(*Reconciler[O, C]).SetupWithManager: removed",
			Package: mod + "/replicaset/kube",
			Key:     "kube.Reconciler.SetupWithManager",
		},
	}, {
		msg: "./replicaset/kube.Adapter[O, C].Describe: added",
		want: change{
			Full:    mod + "/replicaset/kube.Adapter[O, C].Describe: added",
			Package: mod + "/replicaset/kube",
			Key:     "kube.Adapter.Describe",
		},
	}, {
		msg: "./naming.Random.Names, method set of *Salted: removed",
		want: change{
			Full:    mod + "/naming.Random.Names, method set of *Salted: removed",
			Package: mod + "/naming",
			Key:     "naming.Random.Names",
		},
	}, {
		msg: "./replicaset.PhaseReady: value changed from 1 to 2",
		want: change{
			Full:    mod + "/replicaset.PhaseReady: value changed from 1 to 2",
			Package: mod + "/replicaset",
			Key:     "replicaset.PhaseReady",
		},
	}, {
		msg: "./vmprovider.Set: no longer implements ./vmprovider.Provider",
		want: change{
			Full:    mod + "/vmprovider.Set: no longer implements ./vmprovider.Provider",
			Package: mod + "/vmprovider",
			Key:     "vmprovider.Set",
		},
	}, {
		// A type string holding ": " after the object does not confuse it.
		msg: `./examples/vmset/api/v1alpha1.Spec: changed from struct{A int "json:\"a\""} to int`,
		want: change{
			Full:    mod + `/examples/vmset/api/v1alpha1.Spec: changed from struct{A int "json:\"a\""} to int`,
			Package: mod + "/examples/vmset/api/v1alpha1",
			Key:     "v1alpha1.Spec",
		},
	}, {
		msg: "Version: removed",
		want: change{
			Full:    mod + ".Version: removed",
			Package: mod,
			Key:     "replicakit.Version",
		},
	}, {
		msg: "(*T).M: removed",
		want: change{
			Full:    mod + ".(*T).M: removed",
			Package: mod,
			Key:     "replicakit.T.M",
		},
	}, {
		msg: "k8s.io/api/core/v1.PodSpec.Hostname: removed",
		want: change{
			Full:    "k8s.io/api/core/v1.PodSpec.Hostname: removed",
			Package: "k8s.io/api/core/v1",
			Key:     "v1.PodSpec.Hostname",
		},
	}, {
		msg: "example.com/lib/v2.F: removed",
		want: change{
			Full:    "example.com/lib/v2.F: removed",
			Package: "example.com/lib/v2",
			Key:     "lib.F",
		},
	}, {
		msg: "package github.com/replicakit/replicakit/replicaset/kube/claim: removed",
		want: change{
			Full:      "package github.com/replicakit/replicakit/replicaset/kube/claim: removed",
			Package:   mod + "/replicaset/kube/claim",
			Key:       mod + "/replicaset/kube/claim",
			IsPackage: true,
		},
	}}
	for _, tt := range tests {
		got, err := parseMessage(mod, tt.msg)
		if err != nil {
			t.Errorf("parseMessage(%q): %v", tt.msg, err)
			continue
		}
		tt.want.Message = tt.msg
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("parseMessage(%q) (-want +got):\n%s", tt.msg, diff)
		}
	}
}

func TestParseMessage_Errors(t *testing.T) {
	for _, msg := range []string{
		"removed",
		": removed",
		"./naming: removed",
		"./naming.(): removed",
	} {
		if got, err := parseMessage(mod, msg); err == nil {
			t.Errorf("parseMessage(%q) = %+v, want an error", msg, got)
		}
	}
}

func TestParseReport(t *testing.T) {
	tests := []struct {
		name        string
		report      string
		wantKeys    []string
		wantSkipped []string
	}{{
		name:   "empty",
		report: "",
	}, {
		name: "incompatible only, no header",
		report: "- ./deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry\n" +
			"- ./replicaset/kube.Adapter.Observe: removed\n",
		wantKeys: []string{"deletionpolicy.Default", "kube.Adapter.Observe"},
	}, {
		name: "full report: compatible changes are skipped",
		report: "Incompatible changes:\n" +
			"- ./naming.Random.Seed: removed\n" +
			"Compatible changes:\n" +
			"- ./naming.Random.Source: added\n" +
			"- package github.com/replicakit/replicakit/vmprovider/vsphere: added\n",
		wantKeys: []string{"naming.Random.Seed"},
	}, {
		name:   "compatible changes only",
		report: "Compatible changes:\n- ./naming.Random.Source: added\n",
	}, {
		name:        "stray lines are handed back",
		report:      "! second, different message for obj x\n\n- ./naming.F: removed\n",
		wantKeys:    []string{"naming.F"},
		wantSkipped: []string{"! second, different message for obj x"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, skipped, err := parseReport(mod, strings.NewReader(tt.report))
			if err != nil {
				t.Fatal(err)
			}
			var keys []string
			for _, c := range changes {
				keys = append(keys, c.Key)
			}
			if diff := cmp.Diff(tt.wantKeys, keys); diff != "" {
				t.Errorf("keys (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseReport_BadMessage(t *testing.T) {
	if _, _, err := parseReport(mod, strings.NewReader("- no object here\n")); err == nil {
		t.Error("parseReport accepted a message without an object")
	}
}

func TestListed(t *testing.T) {
	ident := func(key string) change { return change{Key: key} }
	pkg := func(path string) change { return change{Key: path, IsPackage: true} }
	tests := []struct {
		text string
		c    change
		want bool
	}{
		{"- `deletionpolicy.Default(seed)` → `deletionpolicy.Default()`", ident("deletionpolicy.Default"), true},
		{"- deletionpolicy.Default lost its seed.", ident("deletionpolicy.Default"), true},
		{"- deletionpolicy.Default", ident("deletionpolicy.Default"), true},
		{"(deletionpolicy.Default)", ident("deletionpolicy.Default"), true},
		{"- `kube.Reconciler[O, C]` became an interface", ident("kube.Reconciler"), true},
		{"- `replicaset/kube.Reconciler.Policies`: a Lookup", ident("kube.Reconciler.Policies"), true},
		{"- `github.com/replicakit/replicakit/replicaset/kube.Reconciler.Policies`", ident("kube.Reconciler.Policies"), true},
		{"- `kube.Adapter.Observe` → `kube.Adapter.Describe`", ident("kube.Adapter.Describe"), true},
		{"- `kube.Adapter.Observe` → `kube.Adapter.Describe`", ident("kube.Adapter.Observe"), true},
		// A longer name is another identifier.
		{"- `deletionpolicy.DefaultRegistry`", ident("deletionpolicy.Default"), false},
		{"- `mydeletionpolicy.Default`", ident("deletionpolicy.Default"), false},
		{"- `x.deletionpolicy.Default`", ident("deletionpolicy.Default"), false},
		// A field or method does not list its type.
		{"- `kube.Reconciler.Policies` changed type", ident("kube.Reconciler"), false},
		{"- `kube.Reconciler.Policies` changed type", ident("kube.Reconciler.Policies"), true},
		// The bare name, or the type without its package, is not enough.
		{"- `Default` lost its seed", ident("deletionpolicy.Default"), false},
		{"- `Reconciler.Policies` changed type", ident("kube.Reconciler.Policies"), false},
		// A later occurrence counts when an earlier one does not.
		{"`kube.Reconciler.Policies`, and `kube.Reconciler` itself", ident("kube.Reconciler"), true},
		{"", ident("deletionpolicy.Default"), false},
		// Packages: the full import path, not inside a longer one.
		{"- package `github.com/replicakit/replicakit/replicaset/claim` is removed", pkg(mod + "/replicaset/claim"), true},
		{"- removed github.com/replicakit/replicakit/replicaset/claim.", pkg(mod + "/replicaset/claim"), true},
		{"- `github.com/replicakit/replicakit/replicaset/claimer` is removed", pkg(mod + "/replicaset/claim"), false},
		{"- `github.com/replicakit/replicakit/replicaset/claim/v2` is new", pkg(mod + "/replicaset/claim"), false},
		{"- `github.com/replicakit/replicakit/replicaset/claim.Claim` changed", pkg(mod + "/replicaset/claim"), false},
		{"- `x/github.com/replicakit/replicakit/replicaset/claim` is removed", pkg(mod + "/replicaset/claim"), false},
		{"- `replicaset/claim` is removed", pkg(mod + "/replicaset/claim"), false},
	}
	for _, tt := range tests {
		if got := listed(tt.text, tt.c); got != tt.want {
			t.Errorf("listed(%q, %q) = %v, want %v", tt.text, tt.c.Key, got, tt.want)
		}
	}
}

const changelog = "# Changelog\n\n" +
	"How to list: name `kube.Example.Format` under Unreleased.\n\n" +
	"## Unreleased\n\n" +
	"### Breaking changes\n\n" +
	"<!-- e.g. `naming.Template` -->\n" +
	"- `deletionpolicy.Default(seed)` → `deletionpolicy.Default()`.\n\n" +
	"```\n## not a heading\n```\n" +
	"### Added\n\n" +
	"- `naming.Added`.\n\n" +
	"## v0.1.0 — 2026-12-02\n\n" +
	"Commit: `a97b8e0` (`a97b8e0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa`).\n\n" +
	"### Breaking changes\n\n" +
	"- `kube.Adapter.Observe` → `kube.Adapter.Describe`.\n\n" +
	"## v0.0.9\n\n" +
	"Commit: `bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb`.\n"

func TestUnreleasedBreaking(t *testing.T) {
	tests := []struct {
		name      string
		changelog string
		want      string
		wantErr   bool
	}{{
		name:      "the section's text, comments removed, up to the next heading",
		changelog: changelog,
		want:      "\n\n- `deletionpolicy.Default(seed)` → `deletionpolicy.Default()`.\n\n```\n## not a heading\n```",
	}, {
		name:      "bracketed title",
		changelog: "## [Unreleased]\n### Breaking changes\n- `naming.F`\n## v0.1.0\n",
		want:      "- `naming.F`",
	}, {
		name:      "no breaking changes subsection",
		changelog: "## Unreleased\n### Added\n- `naming.F`\n",
		want:      "",
	}, {
		name:      "a subsection of a release is not Unreleased's",
		changelog: "## Unreleased\n\n## v0.1.0\n### Breaking changes\n- `naming.F`\n",
		want:      "",
	}, {
		name:      "an unclosed comment runs to the end",
		changelog: "## Unreleased\n### Breaking changes\n- `naming.F`\n<!-- `naming.G`\n",
		want:      "- `naming.F`\n",
	}, {
		name:      "no Unreleased section",
		changelog: "# Changelog\n## v0.1.0\n### Breaking changes\n- `naming.F`\n",
		wantErr:   true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := unreleasedBreaking(tt.changelog)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error: %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestLastRelease(t *testing.T) {
	tests := []struct {
		name        string
		changelog   string
		wantVersion string
		wantCommit  string
		wantErr     string
	}{{
		name:        "the first release after Unreleased",
		changelog:   changelog,
		wantVersion: "v0.1.0",
		wantCommit:  "a97b8e0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	}, {
		name:        "bracketed version, sections without versions skipped",
		changelog:   "## Unreleased\n## Notes\nCommit: cccccccccccccccccccccccccccccccccccccccc\n## [v1.2.3]\nCommit: dddddddddddddddddddddddddddddddddddddddd\n",
		wantVersion: "v1.2.3",
		wantCommit:  "dddddddddddddddddddddddddddddddddddddddd",
	}, {
		name:      "abbreviated hash only",
		changelog: "## Unreleased\n## v0.1.0\nCommit: `a97b8e0`\n",
		wantErr:   "no full 40-digit commit hash",
	}, {
		name:      "no Commit: line",
		changelog: "## Unreleased\n## v0.1.0\nThe commit is dddddddddddddddddddddddddddddddddddddddd.\n",
		wantErr:   `no line beginning "Commit:"`,
	}, {
		name:      "no release",
		changelog: "## Unreleased\n### Breaking changes\n",
		wantErr:   "no release section",
	}, {
		name:      "no Unreleased section",
		changelog: "## v0.1.0\nCommit: dddddddddddddddddddddddddddddddddddddddd\n",
		wantErr:   "comes before",
	}, {
		name:      "empty",
		changelog: "",
		wantErr:   "Unreleased",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			version, commit, err := lastRelease(tt.changelog)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if version != tt.wantVersion || commit != tt.wantCommit {
				t.Errorf("got %s %s, want %s %s", version, commit, tt.wantVersion, tt.wantCommit)
			}
		})
	}
}

func TestPackageName(t *testing.T) {
	for path, want := range map[string]string{
		mod:                                  "replicakit",
		mod + "/replicaset/kube":             "kube",
		mod + "/examples/vmset/api/v1alpha1": "v1alpha1",
		"example.com/lib/v2":                 "lib",
		"example.com/lib/v12":                "lib",
		"k8s.io/api/core/v1":                 "v1",
		"v2":                                 "v2",
	} {
		if got := packageName(path); got != want {
			t.Errorf("packageName(%q) = %q, want %q", path, got, want)
		}
	}
}
