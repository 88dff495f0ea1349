package docs

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// root is the repository's top folder, seen from this package's.
const root = "../.."

// TestEveryOptionIsDocumented fails for a field of respire.Options without a row
// of its own in docs/options.md's table: the README lists only the fields a
// newcomer reaches for first and sends the reader there for the rest.
func TestEveryOptionIsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "options.go"), nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Options" {
			return true
		}
		for _, fl := range ts.Type.(*ast.StructType).Fields.List {
			for _, name := range fl.Names {
				if name.IsExported() {
					fields = append(fields, name.Name)
				}
			}
		}
		return false
	})
	if len(fields) == 0 {
		t.Fatal("no fields found in respire.Options")
	}
	// The first cell of a table row names one or more fields: "| `A`, `B` | ...".
	documented := map[string]bool{}
	for _, line := range readLines(t, filepath.Join(root, "docs", "options.md")) {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.SplitN(line, "|", 3)[1]
		for _, m := range regexp.MustCompile("`([A-Za-z]+)`").FindAllStringSubmatch(cell, -1) {
			documented[m[1]] = true
		}
	}
	for _, name := range fields {
		if !documented[name] {
			t.Errorf("respire.Options.%s has no row in docs/options.md", name)
		}
	}
}

// TestLinksResolve fails for a relative link in README.md or docs/*.md whose
// file does not exist, or whose #anchor names no heading of that file (GitHub's
// anchors: lower case, punctuation dropped, spaces as hyphens, -1, -2... for
// repeats).
func TestLinksResolve(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, filepath.Join(root, "README.md"))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		for i, line := range prose(readLines(t, page)) {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // a URL, not a path in the repository
				}
				file, anchor, _ := strings.Cut(target, "#")
				dest := page
				if file != "" {
					dest = filepath.Join(filepath.Dir(page), file)
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s:%d: link %s: %v", page, i+1, target, err)
					continue
				}
				if anchor != "" && !anchors(t, dest)[anchor] {
					t.Errorf("%s:%d: link %s: no heading with that anchor in %s", page, i+1, target, dest)
				}
			}
		}
	}
}

// anchors returns the anchors GitHub gives the headings of a Markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	if !strings.HasSuffix(path, ".md") {
		return out
	}
	seen := map[string]int{}
	drop := regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)
	for _, line := range prose(readLines(t, path)) {
		text, ok := heading(line)
		if !ok {
			continue
		}
		a := strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(text), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// heading returns the text of an ATX heading line ("## Text").
func heading(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || !strings.HasPrefix(line[level:], " ") {
		return "", false
	}
	return strings.TrimSpace(line[level:]), true
}

// prose blanks the lines inside fenced code blocks, keeping line numbers, since
// neither a link nor a heading can be written there.
func prose(lines []string) []string {
	out := make([]string, len(lines))
	inside := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inside = !inside
			continue
		}
		if !inside {
			out[i] = l
		}
	}
	return out
}

// readLines returns a file's lines.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}
