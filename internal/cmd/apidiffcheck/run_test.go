package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// write writes content to a file named name in dir and returns its path.
func write(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	log := write(t, dir, "CHANGELOG.md", changelog)
	root := write(t, dir, "root.txt",
		"- ./deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry\n")
	rootUnlisted := write(t, dir, "root-unlisted.txt",
		"- ./deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry\n"+
			"- ./replicaset/kube.Adapter.Observe: removed\n"+
			"- package github.com/replicakit/replicakit/replicaset/claim: removed\n")
	examples := write(t, dir, "examples.txt",
		"- ./vmset/cmd/vmset-manager.Main: removed\n")
	compatible := write(t, dir, "compatible.txt",
		"Compatible changes:\n- ./naming.New: added\n")
	empty := write(t, dir, "empty.txt", "")
	exMod := mod + "/examples"

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{{
		name:       "every incompatible change listed",
		args:       []string{"-changelog", log, mod + "=" + root, exMod + "=" + compatible},
		wantCode:   0,
		wantStdout: "apidiffcheck: 1 incompatible change since the last release, all listed under Unreleased → Breaking changes:\n  deletionpolicy.Default  (" + mod + "/deletionpolicy.Default: changed from func(int64) *Registry to func() *Registry)\n",
	}, {
		name:       "no incompatible changes",
		args:       []string{"-changelog", log, mod + "=" + empty, exMod + "=" + compatible},
		wantCode:   0,
		wantStdout: "apidiffcheck: no incompatible API changes since the last release\n",
	}, {
		name:     "unlisted changes fail, named with how to list them",
		args:     []string{"-changelog", log, mod + "=" + rootUnlisted},
		wantCode: 1,
		wantStdout: "apidiffcheck: 3 incompatible changes since the last release, 2 not listed in " + log + " under \"## Unreleased\" → \"### Breaking changes\":\n\n" +
			"  " + mod + "/replicaset/kube.Adapter.Observe: removed\n" +
			"      list it by naming kube.Adapter.Observe\n" +
			"  package " + mod + "/replicaset/claim: removed\n" +
			"      list it by naming " + mod + "/replicaset/claim\n\n" +
			"If the change is intended, add an entry that names it, with its one-line migration, e.g.\n\n" +
			"  ### Breaking changes\n\n" +
			"  - `kube.Adapter.Observe`: what changed. Migration: what importers write instead.\n\n" +
			"Otherwise restore the old API. The top of " + log + " describes the format.\n",
	}, {
		name:       "ignored packages do not count",
		args:       []string{"-changelog", log, "-ignore", exMod + "/vmset/cmd/vmset-demo, " + exMod + "/vmset/cmd/vmset-manager", exMod + "=" + examples},
		wantCode:   0,
		wantStdout: "apidiffcheck: no incompatible API changes since the last release\n",
	}, {
		name:       "a change in a main package counts unless ignored",
		args:       []string{"-changelog", log, exMod + "=" + examples},
		wantCode:   1,
		wantStdout: "apidiffcheck: 1 incompatible change since the last release, 1 not listed in " + log + " under \"## Unreleased\" → \"### Breaking changes\":\n\n  " + exMod + "/vmset/cmd/vmset-manager.Main: removed\n      list it by naming vmset-manager.Main\n\nIf the change is intended, add an entry that names it, with its one-line migration, e.g.\n\n  ### Breaking changes\n\n  - `vmset-manager.Main`: what changed. Migration: what importers write instead.\n\nOtherwise restore the old API. The top of " + log + " describes the format.\n",
	}, {
		name:       "release",
		args:       []string{"-changelog", log, "-release"},
		wantCode:   0,
		wantStdout: "a97b8e0aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	}, {
		name:       "release without a recorded commit",
		args:       []string{"-changelog", write(t, dir, "norelease.md", "## Unreleased\n"), "-release"},
		wantCode:   2,
		wantStderr: "apidiffcheck: " + filepath.Join(dir, "norelease.md") + ": no release section (\"## v1.2.3\") after \"## Unreleased\"\n",
	}, {
		name:       "changelog without Unreleased",
		args:       []string{"-changelog", write(t, dir, "old.md", "## v0.1.0\n"), mod + "=" + root},
		wantCode:   2,
		wantStderr: "apidiffcheck: " + filepath.Join(dir, "old.md") + ": no \"## Unreleased\" section\n",
	}, {
		name:     "missing changelog",
		args:     []string{"-changelog", filepath.Join(dir, "none.md"), mod + "=" + root},
		wantCode: 2,
	}, {
		name:     "missing report",
		args:     []string{"-changelog", log, mod + "=" + filepath.Join(dir, "none.txt")},
		wantCode: 2,
	}, {
		name:     "argument without a module",
		args:     []string{"-changelog", log, root},
		wantCode: 2,
	}, {
		name:     "no reports",
		args:     []string{"-changelog", log},
		wantCode: 2,
	}, {
		name:     "unknown flag",
		args:     []string{"-bogus"},
		wantCode: 2,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit status %d, want %d; stdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout.String(), stderr.String())
			}
			if tt.wantStdout != "" || code != 2 {
				if diff := cmp.Diff(tt.wantStdout, stdout.String()); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			}
			if tt.wantStderr != "" {
				if diff := cmp.Diff(tt.wantStderr, stderr.String()); diff != "" {
					t.Errorf("stderr (-want +got):\n%s", diff)
				}
			}
			if code == 2 && stderr.Len() == 0 {
				t.Error("exit status 2 with nothing on stderr")
			}
		})
	}
}
