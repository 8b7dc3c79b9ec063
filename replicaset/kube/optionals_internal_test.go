package kube

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestOptionalInterfaces_OneList: SetupWithManager's doc, the package
// documentation's Optional interfaces section (its list and its
// compile-time checks) and the CHANGELOG's list name exactly the optional
// interfaces set-up logs (optionals), in its order.
func TestOptionalInterfaces_OneList(t *testing.T) {
	var want []string
	for _, it := range (&Reconciler[*corev1.Pod, *corev1.Pod]{}).optionals() {
		want = append(want, strings.TrimPrefix(strings.SplitN(typeName(it), "[", 2)[0], "kube."))
	}
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	interfaces := map[string]bool{}
	var setupDoc, pkgDoc string
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil {
			pkgDoc = f.Doc.Text()
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && ts.Name.Name != "Adapter" {
						if _, ok := ts.Type.(*ast.InterfaceType); ok && ts.Name.IsExported() {
							interfaces[ts.Name.Name] = true
						}
					}
				}
			case *ast.FuncDecl:
				if d.Name.Name == "SetupWithManager" {
					setupDoc = d.Doc.Text()
				}
			}
		}
	}
	named := func(text string, re *regexp.Regexp) []string {
		var out []string
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			if interfaces[m[1]] && !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
		return out
	}
	link := regexp.MustCompile(`\[(\w+)\]`)
	i := strings.Index(setupDoc, "optional interfaces")
	j := strings.Index(setupDoc[max(i, 0):], ")")
	if i < 0 || j < 0 {
		t.Fatal("SetupWithManager's doc has no list of optional interfaces")
	}
	_, section, ok := strings.Cut(pkgDoc, "# Optional interfaces")
	if !ok {
		t.Fatal("the package documentation has no Optional interfaces section")
	}
	section, _, _ = strings.Cut(section, "\n# ")
	list, checks, _ := strings.Cut(section, "var (")
	changelog, err := os.ReadFile("../../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	// The CHANGELOG's list item that names them, up to the next item.
	var clLine string
	if _, item, ok := strings.Cut(string(changelog), "optional interfaces, in the order"); ok {
		clLine, _, _ = strings.Cut(item, "\n- ")
		clLine, _, _ = strings.Cut(clLine, ": ")
	}
	for _, tt := range []struct {
		where string
		got   []string
	}{
		{"SetupWithManager's doc", named(setupDoc[i:i+j], link)},
		{"the package doc's Optional interfaces", named(list, link)},
		{"the package doc's compile-time checks", named(checks, regexp.MustCompile(`kube\.(\w+)\[`))},
		{"the CHANGELOG's list", named(clLine, regexp.MustCompile("`(?:kube\\.)?(\\w+)`"))},
	} {
		if diff := cmp.Diff(want, tt.got); diff != "" {
			t.Errorf("%s lists other optional interfaces than set-up logs (-logged +listed):\n%s", tt.where, diff)
		}
	}
}
