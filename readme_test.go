package replicakit_test

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// guides are the Markdown pages whose code blocks and links are checked:
// the front page and the pages its material moved to.
var guides = []string{
	"README.md",
	"docs/benchmarks.md",
	"docs/layout.md",
	"examples/vmset/README.md",
	"examples/vmset/chaos/README.md",
}

// fence is one fenced code block of a Markdown page.
type fence struct {
	// info is the first word of the info string after the opening fence,
	// such as "go", "sh" or "text"; empty when there is none.
	info string
	// line is the page's line number (from 1) of the block's first line.
	line int
	// body is the block's content, each line ending in a newline.
	body string
	// prose counts the non-blank lines between the previous block (or the
	// page's start) and this block's opening fence.
	prose int
}

// fences returns the fenced code blocks of a Markdown page, in order, and
// the page with the blocks' lines blanked out (for finding links in the
// prose only). Fences are runs of three or more backticks or tildes
// indented by at most three spaces, closed by a run of the same character
// at least as long.
func fences(page string) ([]fence, string, error) {
	var (
		blocks  []fence
		text    strings.Builder
		open    *fence
		ticks   int
		fenceCh string
		prose   int
	)
	lines := strings.Split(page, "\n")
	for i, line := range lines {
		trimmed := strings.TrimLeft(line, " ")
		indent := len(line) - len(trimmed)
		ch := "`"
		if strings.HasPrefix(trimmed, "~") {
			ch = "~"
		}
		run := len(trimmed) - len(strings.TrimLeft(trimmed, ch))
		switch {
		case open == nil && indent <= 3 && run >= 3:
			fields := strings.Fields(trimmed[run:])
			open = &fence{line: i + 2, prose: prose}
			if len(fields) > 0 {
				open.info = fields[0]
			}
			ticks, fenceCh = run, ch
			text.WriteString("\n")
		case open != nil && indent <= 3 && ch == fenceCh && run >= ticks && strings.TrimSpace(trimmed[run:]) == "":
			blocks = append(blocks, *open)
			open, prose = nil, 0
			text.WriteString("\n")
		case open != nil:
			open.body += line + "\n"
			text.WriteString("\n")
		default:
			if strings.TrimSpace(line) != "" {
				prose++
			}
			text.WriteString(line + "\n")
		}
	}
	if open != nil {
		return nil, "", fmt.Errorf("the code block opened at line %d is never closed", open.line-1)
	}
	return blocks, text.String(), nil
}

// isGo reports whether a block's info string marks it as Go.
func isGo(info string) bool {
	return strings.EqualFold(info, "go") || strings.EqualFold(info, "golang")
}

// TestReadme checks that every Go block of the guides is a complete
// program that is gofmt-formatted, vets and builds in this module, and that
// a block followed by its output (a "text" block with at most one line of
// prose, such as "It prints:", between the two) runs, exits 0 and prints
// exactly that output: the front page's tour runs as shown. Fragments are
// not allowed; link to a package Example instead.
func TestReadme(t *testing.T) {
	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	shown := 0
	for _, guide := range guides {
		page, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		blocks, _, err := fences(string(page))
		if err != nil {
			t.Fatalf("%s: %v", guide, err)
		}
		for i, b := range blocks {
			if !isGo(b.info) {
				continue
			}
			var want *string
			if i+1 < len(blocks) && blocks[i+1].info == "text" && blocks[i+1].prose <= 1 {
				want = &blocks[i+1].body
				if guide == "README.md" {
					shown++
				}
			}
			t.Run(fmt.Sprintf("%s:%d", guide, b.line), func(t *testing.T) {
				checkProgram(t, root, filepath.Join(root, guide), b, want)
			})
		}
	}
	if shown == 0 {
		t.Error("README.md shows no Go program followed by its output; the tour must run as shown")
	}
}

// checkProgram checks one Go block of the page at path: it must be a
// formatted, complete program that vets and builds from the module at root,
// and, when want is not nil, print exactly *want and exit 0.
func checkProgram(t *testing.T, root, page string, b fence, want *string) {
	src := []byte(b.body)
	const complete = "Go blocks must be complete programs (package main with func main): show a whole program, or link to a package Example instead of a fragment"
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatalf("%s:%d: %v\n%s", page, b.line, err, complete)
	}
	if f.Name.Name != "main" || !hasMain(f.Decls) {
		t.Fatalf("%s:%d: %s", page, b.line, complete)
	}
	formatted, err := format.Source(src)
	if err != nil {
		t.Fatalf("%s:%d: %v", page, b.line, err)
	}
	if !bytes.Equal(formatted, src) {
		t.Errorf("%s:%d: the block is not gofmt-formatted (-shown +gofmt):\n%s", page, b.line,
			cmp.Diff(strings.Split(string(src), "\n"), strings.Split(string(formatted), "\n")))
	}

	// A line directive makes the compiler and vet report positions in the
	// page rather than in the temporary file.
	dir := t.TempDir()
	file := filepath.Join(dir, "main.go")
	directive := fmt.Sprintf("//line %s:%d\n", page, b.line)
	if err := os.WriteFile(file, append([]byte(directive), src...), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "prog")
	for _, args := range [][]string{{"vet", file}, {"build", "-o", bin, file}} {
		// Files named on the command line resolve their imports through the
		// module of the working directory: this one.
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go %s: %v\n%s", args[0], err, out)
		}
	}
	if want == nil {
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	got, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s:%d: the program failed: %v\n%s", page, b.line, err, stderr.Bytes())
	}
	if diff := cmp.Diff(strings.Split(*want, "\n"), strings.Split(string(got), "\n")); diff != "" {
		t.Errorf("%s:%d: the program's output differs from the output the page shows after it (-shown +got):\n%s", page, b.line, diff)
	}
}

// hasMain reports whether decls declare a function main.
func hasMain(decls []ast.Decl) bool {
	for _, d := range decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" {
			return true
		}
	}
	return false
}

// link matches an inline Markdown link or image and captures its target.
var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestReadmeLinks checks that every relative link in the guides' prose
// names a file or directory of this repository, and that a link to a
// heading of a Markdown page (page.md#heading) names one of its headings.
func TestReadmeLinks(t *testing.T) {
	for _, guide := range guides {
		page, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		_, text, err := fences(string(page))
		if err != nil {
			t.Fatalf("%s: %v", guide, err)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			if file == "" {
				file = path.Base(guide)
			}
			file = path.Join(path.Dir(guide), file)
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s: the link %q leads nowhere: %v", guide, target, err)
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			linked, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if !hasHeading(string(linked), anchor) {
				t.Errorf("%s: the link %q names no heading of %s", guide, target, file)
			}
		}
	}
}

// hasHeading reports whether a Markdown page has a heading whose anchor,
// as GitHub makes it, is anchor.
func hasHeading(page, anchor string) bool {
	_, text, err := fences(page)
	if err != nil {
		return false
	}
	for line := range strings.Lines(text) {
		title, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " ")
		if !ok || !strings.HasPrefix(line, "#") {
			continue
		}
		var slug strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(title)) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || 'a' <= r && r <= 'z' || '0' <= r && r <= '9':
				slug.WriteRune(r)
			}
		}
		if slug.String() == anchor {
			return true
		}
	}
	return false
}

// TestFences: backtick and tilde fences both open blocks, a fence closes
// only on its own character, and the info string's language is read
// without regard to case.
func TestFences(t *testing.T) {
	page := "prose\n```Go\nbacktick\n~~~\nstill inside\n```\n~~~~ go\ntilde\n```\n~~~~\nend\n"
	blocks, _, err := fences(page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("got %d blocks, want 2: %+v", len(blocks), blocks)
	}
	if want := "backtick\n~~~\nstill inside\n"; blocks[0].body != want || !isGo(blocks[0].info) {
		t.Errorf("first block %q (info %q), want %q marked Go", blocks[0].body, blocks[0].info, want)
	}
	if want := "tilde\n```\n"; blocks[1].body != want || !isGo(blocks[1].info) {
		t.Errorf("second block %q (info %q), want %q marked Go", blocks[1].body, blocks[1].info, want)
	}
}
