// Command cmdgen writes package cmds, the typed commands, from the servers' own command
// specifications (internal/cmdspec): one file per command group (string_gen.go,
// sorted_set_gen.go, ...) and the test table commands_gen_test.go, which builds every
// command with its fewest arguments.
//
// Sources: the specification directories of Valkey 9.1.2 and Redis 8.6.3 under -specs
// (valkey-9.1.2/, redis-8.6.3/, Redis's vector-set module in
// redis-8.6.3/vector-sets.commands.json). A command both servers describe with the
// same arguments is taken from Valkey's file; where their arguments differ, from the
// file that describes more of them (the newer options); a command only one server has
// is taken from that server's file, and its doc comment says so.
//
// Usage, from cmds (go generate does it):
//
//	go run ../internal/cmdgen -specs ../../shared/data/command-specs [-o dir] [-pkg dir]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/respire/respire/internal/cmdspec"
)

// servers are the specification directories read, and how doc comments name them.
var servers = []struct{ dir, name string }{
	{"valkey-9.1.2", "Valkey 9.1"},
	{"redis-8.6.3", "Redis 8.6"},
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("cmdgen: ")
	specs := flag.String("specs", "../../shared/data/command-specs", "directory of the servers' command specifications")
	out := flag.String("o", ".", "directory to write the generated files to")
	pkg := flag.String("pkg", ".", "directory of package cmds's hand-written files, whose names the generated ones must not take")
	flag.Parse()
	files, err := generate(*specs, *pkg)
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(*out, f.name), f.src, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// file is one generated file.
type file struct {
	name string
	src  []byte
}

// source is a command as one server describes it.
type source struct {
	server string
	cmd    *cmdspec.Command
}

// generate reads the specifications and returns the generated files.
func generate(specs, pkg string) ([]file, error) {
	byName := map[string][]source{}
	for _, s := range servers {
		cmds, err := cmdspec.ReadDir(filepath.Join(specs, s.dir))
		if err != nil {
			return nil, err
		}
		for _, c := range cmds {
			byName[c.Name] = append(byName[c.Name], source{s.name, c})
		}
	}
	var all []*command
	for _, name := range sortedKeys(byName) {
		srcs := byName[name]
		pick := choose(srcs)
		if pick.cmd.Container {
			continue // CLIENT, CONFIG...: only their subcommands are commands
		}
		// A tip either server gives holds for the command: Redis calls HTTL's
		// output nondeterministic, Valkey does not say.
		pick.cmd.Tips = unionTips(srcs)
		var only string
		if len(srcs) == 1 {
			only = srcs[0].server
		}
		for _, v := range variantsOf(pick.cmd) {
			c, err := newCommand(pick.cmd, v, only, len(srcs) > 1 && !sameArgs(srcs))
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			c.since = sinceBoth(srcs)
			all = append(all, c)
		}
	}
	if err := checkNames(all, pkg); err != nil {
		return nil, err
	}
	groups := map[string][]*command{}
	for _, c := range all {
		groups[c.spec.Group] = append(groups[c.spec.Group], c)
	}
	var files []file
	for _, g := range sortedKeys(groups) {
		src, err := renderGroup(g, groups[g])
		if err != nil {
			return nil, err
		}
		files = append(files, file{g + "_gen.go", src})
	}
	src, err := renderTestTable(all)
	if err != nil {
		return nil, err
	}
	files = append(files, file{"commands_gen_test.go", src})
	return files, nil
}

// choose picks the description to generate from: Valkey's when the servers agree on
// the arguments, else the one with more arguments.
func choose(srcs []source) source {
	best := srcs[0]
	for _, s := range srcs[1:] {
		if countArgs(s.cmd.Args) > countArgs(best.cmd.Args) {
			best = s
		}
	}
	return best
}

// sinceBoth is the version each server added the command in, when both have it and
// they differ ("Redis 8.0.0, Valkey 9.0.0"), or "".
func sinceBoth(srcs []source) string {
	if len(srcs) < 2 || srcs[0].cmd.Since == srcs[1].cmd.Since {
		return ""
	}
	var parts []string
	for _, s := range srcs {
		product, _, _ := strings.Cut(s.server, " ")
		parts = append(parts, product+" "+s.cmd.Since)
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}

// unionTips returns the command tips of every description of a command, once each.
func unionTips(srcs []source) []string {
	var tips []string
	for _, s := range srcs {
		for _, t := range s.cmd.Tips {
			if !slices.ContainsFunc(tips, func(u string) bool { return strings.EqualFold(t, u) }) {
				tips = append(tips, t)
			}
		}
	}
	return tips
}

func sameArgs(srcs []source) bool {
	a, _ := json.Marshal(srcs[0].cmd.Args)
	for _, s := range srcs[1:] {
		b, _ := json.Marshal(s.cmd.Args)
		if !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

func countArgs(args []*cmdspec.Arg) int {
	n := len(args)
	for _, a := range args {
		n += countArgs(a.Args)
	}
	return n
}

// checkNames fails on two exported names that would collide in the package: two
// commands', or a command's and one of the hand-written files of the package in dir.
func checkNames(all []*command, dir string) error {
	seen := map[string]string{}
	handWritten, err := packageNames(dir)
	if err != nil {
		return err
	}
	for _, n := range handWritten {
		seen[n] = "the hand-written files"
	}
	for _, c := range all {
		for _, n := range c.exported() {
			if other, ok := seen[n]; ok {
				return fmt.Errorf("name %s of %s is already taken by %s", n, c.spec.Name, other)
			}
			seen[n] = c.spec.Name
		}
	}
	return nil
}

// packageNames returns the package-level names the hand-written Go files of dir
// declare (not the generated ones, nor tests).
func packageNames(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	var names []string
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, "_gen.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names = append(names, d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch spec := spec.(type) {
					case *ast.TypeSpec:
						names = append(names, spec.Name.Name)
					case *ast.ValueSpec:
						for _, n := range spec.Names {
							names = append(names, n.Name)
						}
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no hand-written Go files of package cmds in %s", dir)
	}
	return names, nil
}

func renderGroup(group string, cmds []*command) ([]byte, error) {
	var body bytes.Buffer
	// Each command's name, made once with its key table entry, which the client
	// reads instead of looking the name up (argkind.Name).
	body.WriteString("var (\n")
	named := map[string]bool{}
	for _, c := range cmds {
		if named[c.nameVar] {
			continue
		}
		named[c.nameVar] = true
		fmt.Fprintf(&body, "%s = &argkind.Name{Text: %q, Entry: entry(%q)}\n", c.nameVar, c.spec.Words()[0], c.spec.Name)
	}
	body.WriteString(")\n\n")
	for _, c := range cmds {
		c.render(&body)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by cmdgen from the servers' command specifications; DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// Regenerate with go generate ./cmds/ (the generator is internal/cmdgen).\n\n")
	fmt.Fprintf(&b, "package cmds\n\n")
	b.WriteString("import (\n\"context\"\n")
	if bytes.Contains(body.Bytes(), []byte("time.")) {
		b.WriteString("\"time\"\n")
	}
	b.WriteString("\n")
	if bytes.Contains(body.Bytes(), []byte("respire.Client,")) {
		b.WriteString("\"github.com/respire/respire\"\n")
	}
	b.WriteString("\"github.com/respire/respire/internal/argkind\"\n")
	if bytes.Contains(body.Bytes(), []byte("resp.Value")) {
		b.WriteString("\"github.com/respire/respire/resp\"\n")
	}
	b.WriteString(")\n\n")
	b.Write(body.Bytes())
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("group %s: %w\n%s", group, err, b.Bytes())
	}
	return src, nil
}

func renderTestTable(all []*command) ([]byte, error) {
	var table bytes.Buffer
	for _, c := range all {
		cached := "nil"
		if c.cacheable() {
			cached = fmt.Sprintf("func(ctx context.Context, c *respire.Client) error {\n_, err := %s.Cached(ctx, c, time.Minute)\nreturn err\n}", c.minimal())
		}
		fmt.Fprintf(&table, "{%q, %d, func() []any { return %s.Args() }, func() []any {\nc := %s\nv := c.argv()\nreturn v.args()\n}, %s},\n", c.spec.Name, c.spec.Arity, c.minimal(), c.minimal(), cached)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by cmdgen from the servers' command specifications; DO NOT EDIT.\n\n")
	fmt.Fprintf(&b, "package cmds\n\n")
	fmt.Fprintf(&b, "import (\n\"context\"\n\"time\"\n\n\"github.com/respire/respire\"\n)\n\n")
	fmt.Fprintf(&b, "// fewest builds every generated command with its fewest arguments: one element for\n")
	fmt.Fprintf(&b, "// each list, every choice the command requires made with its first alternative.\n")
	fmt.Fprintf(&b, "// sent is that form's arguments as they are sent, the name an *argkind.Name; cached\n")
	fmt.Fprintf(&b, "// runs that form through Cached, for the commands that have it.\n")
	fmt.Fprintf(&b, "var fewest = []struct {\n\tname  string\n\tarity int\n\targs  func() []any\n\tsent func() []any\n\tcached func(context.Context, *respire.Client) error\n}{\n")
	b.Write(table.Bytes())
	fmt.Fprintf(&b, "}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("test table: %w\n%s", err, b.Bytes())
	}
	return src, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// wrap formats text as a comment of lines at most width wide, each starting with
// prefix.
func wrap(text, prefix string, width int) string {
	var b strings.Builder
	line := prefix
	for _, w := range strings.Fields(text) {
		if len(line)+len(w)+1 > width && line != prefix {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = prefix
		}
		if line != prefix {
			line += " "
		}
		line += w
	}
	if line != prefix {
		b.WriteString(line + "\n")
	}
	return b.String()
}
