package vmprovider_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/replicakit/replicakit/vmprovider"
)

// FuzzPersonalized personalizes arbitrary cloud-init metadata with an
// arbitrary identity, as the example operator does with a VirtualMachine's
// spec.bootstrap.cloudInit.metaData (whose length limit and "userData or
// metaData" rule only the API server enforces, through the CRD's schema and
// CEL: this checks the Go code behind them). Personalized never panics. It
// fails, with an error wrapping ErrInvalidSpec, exactly when the metadata
// is not a YAML mapping (blank metadata is an empty one, as Guest reads
// it), and a spec carrying such metadata fails Validate alike. Otherwise
// its metadata is a YAML mapping holding every given key with its value,
// instance-id and local-hostname added from the identity unless given (a
// hostname given counts for local-hostname), and nothing else; a block
// mapping that starts with a key at the first column and holds no document
// marker or directive keeps its text as written after the added lines;
// what Guest reads is unchanged but for the added host name; the user data
// is untouched; and personalizing again changes nothing.
func FuzzPersonalized(f *testing.F) {
	for _, md := range []string{
		"", "hostname: db1\n", "instance-id: i-1\nlocal-hostname: h\n", "serial: 12345678901234567890\n",
		"{hostname: db1}", "---\nlocal-hostname: h\n", "a: [b", "# only a comment\n", "null", "~", "- a\n- b\n",
		"network:\n  version: 2\n  ethernets:\n    eth0:\n      addresses: [10.0.0.5/24]\n",
		"  indented: 1\n", "%YAML 1.1\n---\na: b\n", "# c\n{a: 1}", "a: b\n---\nc: d\n", "&x a: b\n", "hostname: 5\n",
	} {
		f.Add(md, "uid-1", "web-0")
	}
	f.Add("a: 1", `quote" and \ back`, "h: colon # hash")
	f.Add("{}", "", "")
	f.Fuzz(func(t *testing.T, metadata, instanceID, hostname string) {
		// Identities are Kubernetes UIDs and names: valid UTF-8.
		instanceID, hostname = strings.ToValidUTF8(instanceID, "?"), strings.ToValidUTF8(hostname, "?")
		in := vmprovider.CloudInit{UserData: "#cloud-config\n", MetaData: metadata}
		out, err := in.Personalized(instanceID, hostname)

		var given map[string]any
		var notMapping error
		if strings.TrimSpace(metadata) != "" { // blank is an empty mapping, as Guest reads it
			notMapping = yaml.Unmarshal([]byte(metadata), &given)
		}
		specErr := vmprovider.Spec{Name: "web-0", Owner: vmprovider.Owner{UID: "u"}, CloudInit: &in}.Validate()
		switch {
		case (err != nil) != (notMapping != nil):
			t.Fatalf("Personalized(%q): %v; the metadata reads as a mapping with error %v", metadata, err, notMapping)
		case err != nil && !errors.Is(err, vmprovider.ErrInvalidSpec):
			t.Fatalf("Personalized(%q): %v; want an error wrapping ErrInvalidSpec", metadata, err)
		case err != nil && !errors.Is(specErr, vmprovider.ErrInvalidSpec):
			t.Fatalf("Validate with metadata %q: %v; Personalized refused it: %v", metadata, specErr, err)
		case err != nil:
			return
		case out.UserData != in.UserData:
			t.Fatalf("Personalized changed the user data to %q", out.UserData)
		}

		var got map[string]any
		if err := yaml.Unmarshal([]byte(out.MetaData), &got); err != nil || (got == nil && strings.TrimSpace(out.MetaData) != "") {
			t.Fatalf("Personalized(%q) = %q, which is not a YAML mapping: %v", metadata, out.MetaData, err)
		}
		want := map[string]any{}
		for k, v := range given {
			want[k] = v
		}
		if _, ok := given["instance-id"]; !ok {
			want["instance-id"] = instanceID
		}
		_, local := given["local-hostname"]
		if _, host := given["hostname"]; !local && !host {
			want["local-hostname"] = hostname
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("Personalized(%q) = %q (-want +got):\n%s", metadata, out.MetaData, diff)
		}
		if plainBlock(metadata) && !strings.HasSuffix(out.MetaData, metadata) {
			t.Fatalf("Personalized(%q) = %q, which does not keep the block mapping as written", metadata, out.MetaData)
		}

		if h, addrs, err := in.Guest(); err == nil {
			if _, host := given["hostname"]; !local && !host {
				h = hostname
			}
			gotH, gotAddrs, err := out.Guest()
			if err != nil {
				t.Fatalf("Guest of %q: %v; the metadata given read %q", out.MetaData, err, metadata)
			}
			if gotH != h || !cmp.Equal(gotAddrs, addrs) {
				t.Fatalf("Guest of %q = %q %q; of %q, %q %q", out.MetaData, gotH, gotAddrs, metadata, h, addrs)
			}
		}

		again, err := out.Personalized(instanceID, hostname)
		if err != nil || again != out {
			t.Fatalf("personalizing %q again = %q, %v; want it unchanged", out.MetaData, again.MetaData, err)
		}
	})
}

// blockKey is a first line that opens a block mapping at the first column:
// a plain key, a colon, and a space or the line's end.
var blockKey = regexp.MustCompile(`^[A-Za-z0-9_][^:\n]*:( |\n|$)`)

// plainBlock says whether metadata is a block mapping whose text
// Personalized must keep as written: it starts with a key at the first
// column and no line is a document marker ("---", "...") or a directive
// ("%").
func plainBlock(metadata string) bool {
	if !blockKey.MatchString(metadata) {
		return false
	}
	for _, line := range strings.Split(metadata, "\n") {
		if strings.HasPrefix(line, "---") || strings.HasPrefix(line, "...") || strings.HasPrefix(line, "%") {
			return false
		}
	}
	return true
}

// TestCloudInit_Personalized_Regressions holds what FuzzPersonalized found:
// metadata that lines added in front would break, or leave another
// mapping, which Personalized used to return as invalid YAML (a null
// document, an indented mapping, a flow mapping after a comment) or as
// another mapping (after a directive); an identity or a value holding a
// character YAML allows only escaped (DEL), which it wrote raw or refused
// without ErrInvalidSpec; and blank metadata that Validate accepts, which
// it refused.
func TestCloudInit_Personalized_Regressions(t *testing.T) {
	for _, tc := range []struct {
		name, in, id string
		want         map[string]any
	}{
		{name: "null document", in: "null", id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0"}},
		{name: "indented mapping", in: "  indented: 1\n", id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0", "indented": 1.0}},
		{name: "directive", in: "%YAML 1.1\n---\na: b\n", id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0", "a": "b"}},
		{name: "flow mapping after a comment", in: "# c\n{a: 1}", id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0", "a": 1.0}},
		{name: "DEL in the identity", in: "", id: "\x7f", want: map[string]any{"instance-id": "\x7f", "local-hostname": "web-0"}},
		{name: "DEL in a value", in: `{a: "\x7f"}`, id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0", "a": "\x7f"}},
		{name: "blank", in: "\t", id: "uid", want: map[string]any{"instance-id": "uid", "local-hostname": "web-0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := personalize(tc.in, tc.id, "web-0")
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := yaml.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("output %q does not parse: %v", out, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("output %q (-want +got):\n%s", out, diff)
			}
		})
	}
}
