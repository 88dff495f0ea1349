// Package cmdspec reads the servers' own command specifications: the JSON files of
// Redis's and Valkey's src/commands (one file per command or subcommand, with its
// summary, arity, flags, key specifications, arguments and reply schema), as copied into
// ../shared/data/command-specs. The typed-command generator (internal/cmdgen) reads
// them through it.
//
// Names and key specifications use package spec's forms (lower-case names,
// "container|sub" for subcommands, spec.KeySpec), the forms the key table's generator
// reads from COMMAND replies, so both generators speak of a command the same way.
//
// # Concurrency
//
// The functions are pure apart from reading files and safe for concurrent use; the
// package starts no goroutines.
package cmdspec

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/respire/respire/internal/command/spec"
)

// ErrSpec is matched by every error about a malformed specification file.
var ErrSpec = errors.New("cmdspec: malformed command specification")

// Command is one command or subcommand as one server's specification describes it.
type Command struct {
	Name       string // lower case; "container|sub" for a subcommand
	Summary    string
	Complexity string
	Group      string // "string", "sorted_set", "vector_set", ...
	Since      string // the version that added it, "1.0.0"
	Deprecated string // the version that deprecated it, or ""
	ReplacedBy string // what to use instead when deprecated, as the spec words it
	Arity      int    // exact when positive, a minimum when negative
	Flags      []string
	DocFlags   []string
	Tips       []string // command_tips, such as "NONDETERMINISTIC_OUTPUT"
	KeySpecs   []spec.KeySpec
	Args       []*Arg
	// Reply is the reply_schema, a JSON Schema of the reply; nil when the file has none.
	Reply *Schema
	// Container is true for a command that only groups subcommands (CLIENT, CONFIG).
	Container bool
}

// Words returns the command's name as the words sent on the wire: ["CONFIG", "GET"].
func (c *Command) Words() []string {
	return strings.Split(strings.ToUpper(c.Name), "|")
}

// HasFlag reports whether the command has the command flag name (as the file spells it,
// "READONLY").
func (c *Command) HasFlag(name string) bool { return slices.Contains(c.Flags, name) }

// Arg is one argument of a command, or of a block or one-of argument.
type Arg struct {
	Name          string `json:"name"`
	Type          string `json:"type"` // key, string, integer, double, unix-time, pattern, pure-token, oneof, block
	Token         string `json:"token"`
	Optional      bool   `json:"optional"`
	Multiple      bool   `json:"multiple"`
	MultipleToken bool   `json:"multiple_token"`
	Since         string `json:"since"`
	Deprecated    string `json:"deprecated_since"`
	Display       string `json:"display"`
	Args          []*Arg `json:"arguments"`
}

// UnmarshalJSON reads an argument, whose flags the files also spell as the string
// "true" (Valkey's client-capa.json).
func (a *Arg) UnmarshalJSON(data []byte) error {
	type plain Arg
	var shadow struct {
		*plain
		Optional      flag `json:"optional"`
		Multiple      flag `json:"multiple"`
		MultipleToken flag `json:"multiple_token"`
	}
	shadow.plain = (*plain)(a)
	if err := json.Unmarshal(data, &shadow); err != nil {
		return err
	}
	a.Optional, a.Multiple, a.MultipleToken = bool(shadow.Optional), bool(shadow.Multiple), bool(shadow.MultipleToken)
	return nil
}

// flag is a boolean that may be spelt as a string.
type flag bool

// UnmarshalJSON reads true, false, "true" or "false".
func (f *flag) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case "true", `"true"`:
		*f = true
	case "false", `"false"`, "null":
		*f = false
	default:
		return fmt.Errorf("%w: %s is not a boolean", ErrSpec, data)
	}
	return nil
}

// Schema is a JSON Schema as reply_schema uses it: the subset of keywords the files use.
type Schema struct {
	Type                 json.RawMessage    `json:"type"` // a string, or a list of strings
	Const                any                `json:"const"`
	Description          string             `json:"description"`
	Items                json.RawMessage    `json:"items"` // a schema, or a list of schemas (tuple)
	MinItems             *int               `json:"minItems"`
	MaxItems             *int               `json:"maxItems"`
	UniqueItems          bool               `json:"uniqueItems"`
	Properties           map[string]*Schema `json:"properties"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	PatternProperties    map[string]*Schema `json:"patternProperties"`
	OneOf                []*Schema          `json:"oneOf"`
	AnyOf                []*Schema          `json:"anyOf"`
	Pattern              string             `json:"pattern"`
	Enum                 []any              `json:"enum"`
}

// Types returns the schema's "type" as a list ("string", "null", ...).
func (s *Schema) Types() []string {
	if len(s.Type) == 0 {
		return nil
	}
	var one string
	if json.Unmarshal(s.Type, &one) == nil {
		return []string{one}
	}
	var many []string
	_ = json.Unmarshal(s.Type, &many)
	return many
}

// ItemSchema returns the schema of every item of an array schema, or nil when the
// items are a tuple or not given.
func (s *Schema) ItemSchema() *Schema {
	var one Schema
	if len(s.Items) == 0 || s.Items[0] != '{' || json.Unmarshal(s.Items, &one) != nil {
		return nil
	}
	return &one
}

// Tuple returns the per-position schemas of an array schema whose items are a list.
func (s *Schema) Tuple() []*Schema {
	var many []*Schema
	if len(s.Items) == 0 || s.Items[0] != '[' || json.Unmarshal(s.Items, &many) != nil {
		return nil
	}
	return many
}

// Additional returns the schema of additionalProperties, or nil when it is absent or
// a boolean.
func (s *Schema) Additional() *Schema {
	var one Schema
	if len(s.AdditionalProperties) == 0 || s.AdditionalProperties[0] != '{' || json.Unmarshal(s.AdditionalProperties, &one) != nil {
		return nil
	}
	return &one
}

// file is the JSON of one specification file: command name → description.
type file map[string]*fileCommand

type fileCommand struct {
	Summary    string          `json:"summary"`
	Complexity string          `json:"complexity"`
	Group      string          `json:"group"`
	Since      string          `json:"since"`
	Deprecated string          `json:"deprecated_since"`
	ReplacedBy string          `json:"replaced_by"`
	Arity      int             `json:"arity"`
	Container  string          `json:"container"`
	Flags      []string        `json:"command_flags"`
	DocFlags   []string        `json:"doc_flags"`
	Tips       []string        `json:"command_tips"`
	KeySpecs   []fileKeySpec   `json:"key_specs"`
	Args       []*Arg          `json:"arguments"`
	Reply      json.RawMessage `json:"reply_schema"`
}

type fileKeySpec struct {
	Flags []string `json:"flags"`
	Begin struct {
		Index *struct {
			Pos int `json:"pos"`
		} `json:"index"`
		Keyword *struct {
			Keyword   string `json:"keyword"`
			StartFrom int    `json:"startfrom"`
		} `json:"keyword"`
	} `json:"begin_search"`
	Find struct {
		Range *struct {
			LastKey int `json:"lastkey"`
			Step    int `json:"step"`
			Limit   int `json:"limit"`
		} `json:"range"`
		Keynum *struct {
			KeyNumIdx int `json:"keynumidx"`
			FirstKey  int `json:"firstkey"`
			Step      int `json:"step"`
		} `json:"keynum"`
	} `json:"find_keys"`
}

// ReadDir reads every *.json file of dir (one server's src/commands) and returns the
// commands and subcommands they describe, sorted by name. A file may describe several
// commands (the vector-set module's commands.json describes all of its commands).
func ReadDir(dir string) ([]*Command, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("cmdspec: no *.json files in %s", dir)
	}
	var out []*Command
	containers := map[string]bool{}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		cmds, err := Parse(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		for _, c := range cmds {
			if name, _, ok := strings.Cut(c.Name, "|"); ok {
				containers[name] = true
			}
		}
		out = append(out, cmds...)
	}
	for _, c := range out {
		c.Container = containers[c.Name]
	}
	slices.SortFunc(out, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(out); i++ {
		if out[i].Name == out[i-1].Name {
			return nil, fmt.Errorf("%w: %q described twice in %s", ErrSpec, out[i].Name, dir)
		}
	}
	return out, nil
}

// Parse reads the commands one specification file describes.
func Parse(data []byte) ([]*Command, error) {
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	out := make([]*Command, 0, len(f))
	for name, fc := range f {
		if fc == nil {
			return nil, fmt.Errorf("%w: %q has no description", ErrSpec, name)
		}
		c, err := fc.command(name)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (fc *fileCommand) command(name string) (*Command, error) {
	c := &Command{
		Name:       strings.ToLower(name),
		Summary:    fc.Summary,
		Complexity: fc.Complexity,
		Group:      fc.Group,
		Since:      fc.Since,
		Deprecated: fc.Deprecated,
		ReplacedBy: fc.ReplacedBy,
		Arity:      fc.Arity,
		Flags:      fc.Flags,
		DocFlags:   fc.DocFlags,
		Tips:       fc.Tips,
		Args:       fc.Args,
	}
	if fc.Container != "" {
		c.Name = strings.ToLower(fc.Container) + "|" + c.Name
	}
	if c.Arity == 0 {
		return nil, fmt.Errorf("%w: %q has no arity", ErrSpec, c.Name)
	}
	if err := checkArgs(c.Name, c.Args); err != nil {
		return nil, err
	}
	for i, ks := range fc.KeySpecs {
		s, err := ks.spec()
		if err != nil {
			return nil, fmt.Errorf("%w: %q key specification %d: %w", ErrSpec, c.Name, i, err)
		}
		c.KeySpecs = append(c.KeySpecs, s)
	}
	if len(fc.Reply) > 0 {
		c.Reply = new(Schema)
		if err := json.Unmarshal(fc.Reply, c.Reply); err != nil {
			return nil, fmt.Errorf("%w: %q reply_schema: %w", ErrSpec, c.Name, err)
		}
	}
	return c, nil
}

// argTypes are the argument types of the format; a generator that met another would
// lay the command out wrong, so an unknown one is an error.
var argTypes = map[string]bool{
	"key": true, "string": true, "integer": true, "double": true, "unix-time": true,
	"pattern": true, "pure-token": true, "oneof": true, "block": true,
}

// checkArgs checks the argument types and fills in the tokens of keywords given by
// name only.
func checkArgs(cmd string, args []*Arg) error {
	for _, a := range args {
		if !argTypes[a.Type] {
			return fmt.Errorf("%w: %q argument %q has unknown type %q", ErrSpec, cmd, a.Name, a.Type)
		}
		if a.Type == "pure-token" && a.Token == "" {
			// Sentinel's SIMULATE-FAILURE names its keywords without tokens; the
			// keyword is the name, as the server matches it without regard to case.
			a.Token = strings.ToUpper(a.Name)
		}
		if (a.Type == "oneof" || a.Type == "block") && len(a.Args) == 0 {
			return fmt.Errorf("%w: %q %s argument %q has no arguments", ErrSpec, cmd, a.Type, a.Name)
		}
		if err := checkArgs(cmd, a.Args); err != nil {
			return err
		}
	}
	return nil
}

func (ks fileKeySpec) spec() (spec.KeySpec, error) {
	s := spec.KeySpec{Flags: ks.Flags, Begin: "unknown", Find: "unknown"}
	switch b := ks.Begin; {
	case b.Index != nil:
		s.Begin, s.Pos = "index", b.Index.Pos
	case b.Keyword != nil:
		s.Begin, s.Keyword, s.StartFrom = "keyword", b.Keyword.Keyword, b.Keyword.StartFrom
	}
	switch f := ks.Find; {
	case f.Range != nil:
		s.Find, s.LastKey, s.KeyStep, s.Limit = "range", f.Range.LastKey, f.Range.Step, f.Range.Limit
	case f.Keynum != nil:
		s.Find, s.KeyNumIdx, s.FirstKey, s.KeyStep = "keynum", f.Keynum.KeyNumIdx, f.Keynum.FirstKey, f.Keynum.Step
	}
	return s, nil
}
