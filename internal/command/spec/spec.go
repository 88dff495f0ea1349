// Package spec reads the entries of a COMMAND or COMMAND INFO reply: a command's name,
// arity, flags, legacy key positions, key specifications and subcommands, in the
// server's own terms (flag names as strings). The generator of the command table
// (../gen) and the client's run-time resolution of commands the table lacks both read
// replies through it, so there is one reader of the format.
//
// Replies come as plain Go values, decoded by the caller: string (simple and bulk
// strings), int64, nil (null) and []any (arrays, sets and maps, a map flattened to
// key, value, key, value...). Entries of every server generation are accepted: Redis
// 6.x's 7-element entries without key specifications (their keys are then described
// by one specification derived from the legacy first/last/step), and the 10-element
// entries of Redis 7.0 and later and Valkey.
//
// # Concurrency
//
// The functions are pure and safe for concurrent use; the package starts no goroutines.
package spec

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Command is one entry of a COMMAND reply.
type Command struct {
	Name              string   // lower case; "container|sub" for subcommands
	Arity             int      // exact when positive, a minimum when negative
	Flags             []string // as the server names them ("write", "movablekeys")
	First, Last, Step int      // legacy key positions
	// KeySpecs are the key specifications, in the server's order. Legacy is true for
	// an entry without them (Redis 6.x): KeySpecs is then one specification derived
	// from the legacy key positions, or none when there are none.
	KeySpecs []KeySpec
	Legacy   bool
	// Tips are the command tips as the server names them ("request_policy:all_shards",
	// "nondeterministic_output"); none before Redis 7.0.
	Tips []string
	Subs []*Command // sorted by name; nil when there are none
}

// HasFlag reports whether the command has the named flag.
func (c *Command) HasFlag(name string) bool { return slices.Contains(c.Flags, name) }

// KeySpec is one key specification (https://redis.io/docs/reference/key-specs/).
type KeySpec struct {
	Flags []string // as the server names them ("RW", "access", "not_key")

	Begin     string // "index", "keyword" or "unknown"
	Pos       int    // index (Begin "index")
	Keyword   string // keyword (Begin "keyword")
	StartFrom int    // where the keyword search starts (Begin "keyword")

	Find      string // "range", "keynum" or "unknown"
	LastKey   int    // range
	KeyStep   int    // range and keynum
	Limit     int    // range
	KeyNumIdx int    // keynum
	FirstKey  int    // keynum
}

// ParseAll reads a whole COMMAND reply: every entry, sorted by name, each named once.
func ParseAll(reply any) ([]*Command, error) {
	list, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("COMMAND: unexpected reply %T", reply)
	}
	cmds := make([]*Command, 0, len(list))
	for _, e := range list {
		c, err := Parse(e)
		if err != nil {
			return nil, err
		}
		if strings.Contains(c.Name, "|") {
			return nil, fmt.Errorf("COMMAND: top-level entry %q looks like a subcommand", c.Name)
		}
		cmds = append(cmds, c)
	}
	slices.SortFunc(cmds, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	for i := 1; i < len(cmds); i++ {
		if cmds[i].Name == cmds[i-1].Name {
			return nil, fmt.Errorf("COMMAND: %q listed twice", cmds[i].Name)
		}
	}
	return cmds, nil
}

// Tip returns the value of the command's tip named name ("request_policy" gives
// "all_shards" for request_policy:all_shards), or "" when it has none.
func (c *Command) Tip(name string) string {
	for _, t := range c.Tips {
		if v, ok := strings.CutPrefix(t, name+":"); ok {
			return v
		}
	}
	return ""
}

// Parse reads one entry of a COMMAND or COMMAND INFO reply.
func Parse(e any) (*Command, error) {
	a, ok := e.([]any)
	if !ok || len(a) < 6 {
		n := 0
		if ok {
			n = len(a)
		}
		return nil, fmt.Errorf("COMMAND: entry is %T of %d elements, want an array of at least 6", e, n)
	}
	name, err := asString(a[0])
	if err != nil {
		return nil, fmt.Errorf("COMMAND: name: %w", err)
	}
	c := &Command{Name: strings.ToLower(name)}
	wrap := func(what string, err error) error { return fmt.Errorf("COMMAND %s: %s: %w", c.Name, what, err) }
	if c.Arity, err = asInt(a[1]); err != nil {
		return nil, wrap("arity", err)
	}
	if c.Flags, err = asStrings(a[2]); err != nil {
		return nil, wrap("flags", err)
	}
	if c.First, err = asInt(a[3]); err != nil {
		return nil, wrap("first key", err)
	}
	if c.Last, err = asInt(a[4]); err != nil {
		return nil, wrap("last key", err)
	}
	if c.Step, err = asInt(a[5]); err != nil {
		return nil, wrap("key step", err)
	}
	if len(a) < 10 {
		// Redis 6.x: no key specifications and no subcommands.
		c.Legacy = true
		if c.First > 0 {
			c.KeySpecs = []KeySpec{legacySpec(c)}
		}
		return c, nil
	}
	if c.Tips, err = asStrings(a[7]); err != nil {
		return nil, wrap("tips", err)
	}
	specs, err := asList(a[8])
	if err != nil {
		return nil, wrap("key specs", err)
	}
	for i, s := range specs {
		ks, err := parseKeySpec(s)
		if err != nil {
			return nil, wrap(fmt.Sprintf("key spec %d", i), err)
		}
		c.KeySpecs = append(c.KeySpecs, ks)
	}
	subs, err := asList(a[9])
	if err != nil {
		return nil, wrap("subcommands", err)
	}
	for _, s := range subs {
		sc, err := Parse(s)
		if err != nil {
			return nil, err
		}
		parent, _, ok := strings.Cut(sc.Name, "|")
		if !ok || parent != c.Name {
			return nil, wrap("subcommands", fmt.Errorf("subcommand %q not named %s|...", sc.Name, c.Name))
		}
		if len(sc.Subs) > 0 {
			return nil, wrap("subcommands", fmt.Errorf("%q has subcommands of its own", sc.Name))
		}
		c.Subs = append(c.Subs, sc)
	}
	slices.SortFunc(c.Subs, func(a, b *Command) int { return strings.Compare(a.Name, b.Name) })
	if err := checkLegacy(c); err != nil {
		return nil, wrap("key specs", err)
	}
	return c, nil
}

// legacySpec describes the legacy key positions (first, last, step) as a key
// specification, as Redis 7 itself does for module commands that declare only those:
// keys from first to last (negative counts from the end), every step-th.
func legacySpec(c *Command) KeySpec {
	last := c.Last - c.First
	if c.Last < 0 {
		last = c.Last
	}
	flags := []string{"RW", "access", "update"}
	if c.HasFlag("readonly") {
		flags = []string{"RO", "access"}
	}
	return KeySpec{Flags: flags, Begin: "index", Pos: c.First, Find: "range", LastKey: last, KeyStep: max(c.Step, 1)}
}

// checkLegacy cross-checks the legacy (first, last, step) triple against the key specs:
// Redis derives the triple from the specs, so its first key must be where the first
// index spec begins. A disagreement means the reply was misread.
func checkLegacy(c *Command) error {
	if c.First == 0 {
		return nil
	}
	for _, ks := range c.KeySpecs {
		if ks.Begin == "index" && ks.Pos == c.First {
			return nil
		}
	}
	return fmt.Errorf("legacy first key %d matches no index key spec", c.First)
}

func parseKeySpec(e any) (KeySpec, error) {
	m, err := asMap(e)
	if err != nil {
		return KeySpec{}, err
	}
	var ks KeySpec
	if v, ok := m["flags"]; ok {
		if ks.Flags, err = asStrings(v); err != nil {
			return ks, fmt.Errorf("flags: %w", err)
		}
	}

	var bsSpec map[string]any
	if ks.Begin, bsSpec, err = typedSpec(m, "begin_search"); err != nil {
		return ks, err
	}
	switch ks.Begin {
	case "index":
		if ks.Pos, err = intField(bsSpec, "index"); err != nil {
			return ks, err
		}
		if ks.Pos < 1 {
			return ks, fmt.Errorf("begin_search index %d < 1", ks.Pos)
		}
	case "keyword":
		kw, ok := bsSpec["keyword"]
		if !ok {
			return ks, errors.New("begin_search keyword: no keyword")
		}
		if ks.Keyword, err = asString(kw); err != nil {
			return ks, fmt.Errorf("begin_search keyword: %w", err)
		}
		if ks.StartFrom, err = intField(bsSpec, "startfrom"); err != nil {
			return ks, err
		}
		if ks.Keyword == "" || ks.StartFrom == 0 {
			return ks, fmt.Errorf("begin_search keyword %q startfrom %d", ks.Keyword, ks.StartFrom)
		}
	case "unknown":
	default:
		return ks, fmt.Errorf("unknown begin_search type %q", ks.Begin)
	}

	var fkSpec map[string]any
	if ks.Find, fkSpec, err = typedSpec(m, "find_keys"); err != nil {
		return ks, err
	}
	switch ks.Find {
	case "range":
		if ks.LastKey, err = intField(fkSpec, "lastkey"); err != nil {
			return ks, err
		}
		if ks.KeyStep, err = intField(fkSpec, "keystep"); err != nil {
			return ks, err
		}
		if ks.Limit, err = intField(fkSpec, "limit"); err != nil {
			return ks, err
		}
		if ks.KeyStep < 1 || ks.Limit < 0 || (ks.Limit > 1 && ks.LastKey != -1) {
			return ks, fmt.Errorf("find_keys range lastkey %d keystep %d limit %d", ks.LastKey, ks.KeyStep, ks.Limit)
		}
	case "keynum":
		if ks.KeyNumIdx, err = intField(fkSpec, "keynumidx"); err != nil {
			return ks, err
		}
		if ks.FirstKey, err = intField(fkSpec, "firstkey"); err != nil {
			return ks, err
		}
		if ks.KeyStep, err = intField(fkSpec, "keystep"); err != nil {
			return ks, err
		}
		if ks.KeyNumIdx < 0 || ks.FirstKey <= ks.KeyNumIdx || ks.KeyStep < 1 {
			return ks, fmt.Errorf("find_keys keynum keynumidx %d firstkey %d keystep %d", ks.KeyNumIdx, ks.FirstKey, ks.KeyStep)
		}
	case "unknown":
	default:
		return ks, fmt.Errorf("unknown find_keys type %q", ks.Find)
	}
	return ks, nil
}

// typedSpec reads {type: T, spec: {...}} under key.
func typedSpec(m map[string]any, key string) (string, map[string]any, error) {
	v, ok := m[key]
	if !ok {
		return "", nil, fmt.Errorf("no %s", key)
	}
	tm, err := asMap(v)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", key, err)
	}
	tv, ok := tm["type"]
	if !ok {
		return "", nil, fmt.Errorf("%s: no type", key)
	}
	typ, err := asString(tv)
	if err != nil {
		return "", nil, fmt.Errorf("%s type: %w", key, err)
	}
	spec := map[string]any{}
	if sv, ok := tm["spec"]; ok {
		if spec, err = asMap(sv); err != nil {
			return "", nil, fmt.Errorf("%s spec: %w", key, err)
		}
	}
	return typ, spec, nil
}

func intField(m map[string]any, key string) (int, error) {
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("no %s", key)
	}
	n, err := asInt(v)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return n, nil
}

func asString(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("want a string, got %T", v)
}

func asInt(v any) (int, error) {
	if n, ok := v.(int64); ok {
		return int(n), nil
	}
	return 0, fmt.Errorf("want an integer, got %T", v)
}

func asList(v any) ([]any, error) {
	if l, ok := v.([]any); ok {
		return l, nil
	}
	return nil, fmt.Errorf("want an array, got %T", v)
}

func asStrings(v any) ([]string, error) {
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(l))
	for _, e := range l {
		s, err := asString(e)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// asMap reads a flattened map (key, value, key, value...).
func asMap(v any) (map[string]any, error) {
	l, err := asList(v)
	if err != nil {
		return nil, err
	}
	if len(l)%2 != 0 {
		return nil, fmt.Errorf("map of %d elements", len(l))
	}
	m := make(map[string]any, len(l)/2)
	for i := 0; i < len(l); i += 2 {
		k, err := asString(l[i])
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		m[k] = l[i+1]
	}
	return m, nil
}
