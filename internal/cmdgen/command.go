package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/respire/respire/internal/cmdspec"
)

// command is one typed command being generated: a constructor, its value type, the
// type's option methods and how it lays out its arguments.
type command struct {
	spec   *cmdspec.Command
	v      variant
	only   string // the server that alone has the command, or ""
	differ bool   // the servers describe its arguments differently
	since  string // each server's version when they added it in different ones
	name   string // constructor: ZRangeWithScores
	typ    string // value type: ZRangeWithScoresCmd
	reply  reply
	// nameVar is the package variable holding the command's *argkind.Name, shared
	// by the variants of one command: nameZRange.
	nameVar string

	params  []string // constructor parameters, "key string"
	inits   []string // constructor statements
	fields  []string // value type fields
	methods []string // option methods, rendered
	emit    []string // statements of argv's body
	types   []string // declarations of the command's own types (enumerations, elements)
	names   []string // exported names besides name and typ
	minArgs []string // constructor arguments of the fewest-arguments build
	minOpts []string // option calls a fewest-arguments build needs (required choices)
	hasErr  bool     // the value type may hold an argument it cannot send

	// checked are the fields that hold a converted duration, or the problem that
	// made it unconvertible: argv reports the problem only if the field is still set
	// when the command is sent, so a later call of the same option replaces it.
	checked map[string]bool

	taken map[string]bool // field, parameter and method names in use
}

// doubleArgs are arguments a specification calls integer that the server reads as a
// double (ZINCRBY's increment, the weights of ZUNION and ZINTER), by command.
var doubleArgs = map[string]string{
	"zincrby": "increment", "zunion": "weight", "zinter": "weight",
	"zunionstore": "weight", "zinterstore": "weight",
}

// withType returns args with the arguments named name, at any depth, of type typ.
func withType(args []*cmdspec.Arg, name, typ string) []*cmdspec.Arg {
	out := make([]*cmdspec.Arg, len(args))
	for i, a := range args {
		fixed := *a
		if a.Name == name {
			fixed.Type = typ
		}
		fixed.Args = withType(a.Args, name, typ)
		out[i] = &fixed
	}
	return out
}

// specFixes are arguments a specification marks optional that the command's arity
// requires: SENTINEL SIMULATE-FAILURE needs at least one mode.
var specFixes = map[string]string{"sentinel|simulate-failure": "mode"}

// requireArg returns args with the argument named name made required.
func requireArg(args []*cmdspec.Arg, name string) []*cmdspec.Arg {
	out := make([]*cmdspec.Arg, len(args))
	for i, a := range args {
		out[i] = a
		if a.Name == name {
			fixed := *a
			fixed.Optional = false
			out[i] = &fixed
		}
	}
	return out
}

// Methods every command type has, which options must not be named.
var commandMethods = map[string]bool{"Do": true, "Cached": true, "In": true, "Args": true}

// methodAlternatives name the options that would take the name of a method every
// command has (MODULE LOADEX's ARGS).
var methodAlternatives = map[string]string{"Args": "Arguments"}

func newCommand(c *cmdspec.Command, v variant, only string, differ bool) (*command, error) {
	g := &command{spec: c, v: v, only: only, differ: differ, taken: map[string]bool{}, checked: map[string]bool{}}
	g.name = goName(c.Name) + v.suffix
	g.typ = g.name + "Cmd"
	g.nameVar = "name" + goName(c.Name)
	for i, w := range c.Words() {
		if i == 0 {
			// The command's name carries its table entry (argkind.Name).
			g.emit = append(g.emit, fmt.Sprintf("v.add(%s)", g.nameVar))
			continue
		}
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", w))
	}
	args := c.Args
	if name, ok := specFixes[c.Name]; ok {
		args = requireArg(args, name)
	}
	if name, ok := doubleArgs[c.Name]; ok {
		args = withType(args, name, "double")
	}
	if err := g.seq(args, true); err != nil {
		return nil, err
	}
	if len(args) == 0 && (c.Arity < 0 && -c.Arity > len(c.Words()) || c.Arity > len(c.Words())) {
		// The specification describes no arguments the command takes (DEBUG):
		// they are given as words.
		g.params = append(g.params, "args ...any")
		g.fields = append(g.fields, "args []any")
		g.inits = append(g.inits, "c.args = args")
		g.emit = append(g.emit, "for _, x := range c.args {\nv.add(x)\n}")
		g.minArgs = append(g.minArgs, `"1"`)
	}
	g.requireFrom()
	g.reply = replyOf(c, v)
	return g, nil
}

// requireFrom makes GEOSEARCH's and GEOSEARCHSTORE's FROM choice required unless the
// area is BYPOLYGON: Valkey 9.1's specification made FROM optional because BYPOLYGON
// needs none, and without one any other search is refused by the server.
func (g *command) requireFrom() {
	if g.spec.Name != "geosearch" && g.spec.Name != "geosearchstore" {
		return
	}
	from, polygon := -1, ""
	for i, e := range g.emit {
		if strings.HasPrefix(e, "switch c.from {") {
			from = i
		}
		if m := polygonCase.FindStringSubmatch(e); m != nil {
			polygon = m[1]
		}
	}
	if from < 0 || polygon == "" {
		panic("cmdgen: " + g.spec.Name + " has no FROM choice or no BYPOLYGON")
	}
	g.emit[from] = strings.TrimSuffix(g.emit[from], "}") + "default:\nif c.by != " + polygon + " {\nv.fail(problemChoice)\n}\n}"
	g.minOpts = append(g.minOpts, `.FromMember("m")`)
}

// polygonCase finds the case of the BY choice that lays out BYPOLYGON.
var polygonCase = regexp.MustCompile(`(?s)^switch c\.by \{.*case (\d+):\n(?:v\.add\("BYPOLYGON"\)\n)?for _, x := range c\.byPolygonArgs`)

func (g *command) exported() []string {
	return append([]string{g.name, g.typ}, g.names...)
}

// unique returns base, or base with a number, not yet used in the command.
func (g *command) unique(base string) string {
	if alt, ok := methodAlternatives[base]; ok && commandMethods[base] {
		base = alt
	}
	name := base
	for i := 2; g.taken[name] || commandMethods[name] || goKeywords[name]; i++ {
		name = fmt.Sprintf("%s%d", base, i)
	}
	g.taken[name] = true
	return name
}

// scalar is how a scalar argument is taken and sent.
type scalar struct {
	goType string
	// conv is the expression sending a value x of goType; convErr, when set instead,
	// is one whose value may be the problem that x cannot be sent (convert).
	conv    func(x string) string
	convErr func(x string) string
	zero    string // a value for the fewest-arguments build
}

func scalarOf(a *cmdspec.Arg) (scalar, bool) {
	id := func(x string) string { return x }
	name := strings.ToLower(a.Name)
	switch a.Type {
	case "key":
		return scalar{goType: "string", conv: id, zero: `"k"`}, true
	case "pattern":
		return scalar{goType: "string", conv: id, zero: `"p"`}, true
	case "string":
		if name == "min-idle-time" {
			// XCLAIM and XAUTOCLAIM take it in milliseconds.
			return scalar{goType: "time.Duration", convErr: func(x string) string { return "durationMilliseconds(" + x + ")" }, zero: "time.Second"}, true
		}
		if valueLike(name) {
			return scalar{goType: "any", conv: id, zero: `"v"`}, true
		}
		return scalar{goType: "string", conv: id, zero: `"s"`}, true
	case "integer":
		switch name {
		case "seconds":
			return scalar{goType: "time.Duration", convErr: func(x string) string { return "durationSeconds(" + x + ")" }, zero: "time.Second"}, true
		case "milliseconds", "min-idle-time", "ms", "timeout", "ttl":
			// Every integer timeout (WAIT, MIGRATE, CLIENT PAUSE), XCLAIM's IDLE ms
			// and RESTORE's ttl are milliseconds.
			return scalar{goType: "time.Duration", convErr: func(x string) string { return "durationMilliseconds(" + x + ")" }, zero: "time.Second"}, true
		case "unix-time-seconds":
			// HEXPIREAT's time, which the specification gives as an integer.
			return scalar{goType: "time.Time", conv: func(x string) string { return x + ".Unix()" }, zero: "time.Unix(1, 0)"}, true
		case "unix-time-milliseconds":
			return scalar{goType: "time.Time", conv: func(x string) string { return x + ".UnixMilli()" }, zero: "time.Unix(1, 0)"}, true
		case "ifdeq-digest", "ifdne-digest":
			// The specification says integer, but the server takes the digest as DIGEST
			// returns it: 16 hexadecimal characters.
			return scalar{goType: "string", conv: id, zero: `"0000000000000000"`}, true
		case "cursor":
			// A cursor is an unsigned 64-bit number (ScanPage.Cursor).
			return scalar{goType: "uint64", conv: id, zero: "0"}, true
		}
		return scalar{goType: "int64", conv: id, zero: "1"}, true
	case "double":
		if name == "min" || name == "max" {
			// Score ranges are numbers, infinities or exclusive bounds: "-inf", "(1.5".
			return scalar{goType: "string", conv: id, zero: `"1"`}, true
		}
		if name == "timeout" {
			return scalar{goType: "time.Duration", conv: func(x string) string { return "fractionalSeconds(" + x + ")" }, zero: "time.Second"}, true
		}
		return scalar{goType: "float64", conv: id, zero: "1"}, true
	case "unix-time":
		if strings.Contains(name, "milli") {
			return scalar{goType: "time.Time", conv: func(x string) string { return x + ".UnixMilli()" }, zero: "time.Unix(1, 0)"}, true
		}
		return scalar{goType: "time.Time", conv: func(x string) string { return x + ".Unix()" }, zero: "time.Unix(1, 0)"}, true
	}
	return scalar{}, false
}

// valueLike reports whether a string argument carries the caller's data (any value
// the server stores or compares), taken as any so that []byte and numbers pass as
// they are, rather than a name or a keyword.
func valueLike(name string) bool {
	for _, w := range []string{"value", "element", "member", "pivot", "message", "arg", "vector"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// isCount reports whether args[i] is the count of the list that follows it (numkeys
// before key [key ...]): the count is computed, never given.
func isCount(args []*cmdspec.Arg, i int) bool {
	a := args[i]
	if a.Type != "integer" || a.Optional || a.Token != "" || !strings.HasPrefix(strings.ToLower(a.Name), "num") || i+1 >= len(args) {
		return false
	}
	return args[i+1].Multiple
}

// trailingList reports whether args[i] is an optional list that ends the arguments
// without a keyword (GEOPOS key [member ...], EVAL's arguments): the constructor's
// variadic parameter, which may be left empty, rather than an option.
func trailingList(args []*cmdspec.Arg, i int) bool {
	a := args[i]
	return i == len(args)-1 && a.Optional && a.Multiple && a.Token == "" && a.Type != "block" && listLike(a)
}

// seq lays out a sequence of arguments; tail says that no required argument follows
// the sequence.
func (g *command) seq(args []*cmdspec.Arg, tail bool) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case isCount(args, i) && listLike(args[i+1]):
			next := args[i+1]
			variadic := tail && lastParam(args, i+1)
			if next.Optional {
				s, _ := scalarOf(next)
				g.list(next, s, variadic, true, listParam)
			} else if _, err := g.required(next, variadic, true); err != nil {
				return err
			}
			i++
		case tail && trailingList(args, i):
			s, _ := scalarOf(a)
			g.list(a, s, true, false, listParam)
		case a.Optional:
			if err := g.optional(a); err != nil {
				return err
			}
		default:
			if _, err := g.required(a, tail && lastParam(args, i), false); err != nil {
				return err
			}
		}
	}
	return nil
}

// lastParam reports whether no parameter follows args[i], so that it can be the
// constructor's variadic parameter.
func lastParam(args []*cmdspec.Arg, i int) bool {
	for j := i + 1; j < len(args); j++ {
		if !args[j].Optional || trailingList(args, j) {
			return false
		}
	}
	return true
}

// listLike reports whether a required argument is laid out as a list of its own (a
// list of scalars or of element blocks), which a count before it can measure.
func listLike(a *cmdspec.Arg) bool {
	if a.Type == "block" {
		return elementBlock(a.Args)
	}
	s, ok := scalarOf(a)
	return ok && s.conv != nil
}

// required lays out a required argument: a constructor parameter, or a choice that
// Do checks was made. counted puts the list's length before it.
func (g *command) required(a *cmdspec.Arg, variadic, counted bool) (string, error) {
	if g.v.token != "" && a.Token == g.v.token {
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
		return "", nil
	}
	switch {
	case a.Type == "pure-token":
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
		return "", nil
	case a.Type == "oneof" && !a.Multiple:
		if allPureTokens(a.Args) {
			return g.enum(a), nil
		}
		return "", g.choice(a, true)
	case a.Type == "block" && !a.Multiple && (simpleBlock(a.Args) || optionBlock(a.Args) || countedElements(a.Args)):
		// A required block's arguments are the command's own: its required ones
		// parameters, its optional ones methods.
		if a.Token != "" {
			g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
		}
		return "", g.seq(a.Args, variadic)
	case a.Type == "block" && a.Multiple && elementBlock(a.Args):
		return g.elements(a, variadic, counted, false), nil
	case a.Type == "block" && !a.Multiple && parallelBlock(a.Args):
		return g.parallel(a, variadic), nil
	case a.Multiple:
		if s, ok := scalarOf(a); ok && s.conv != nil {
			return g.list(a, s, variadic, counted, listRequired), nil
		}
	default:
		if s, ok := scalarOf(a); ok {
			return g.param(a, s), nil
		}
	}
	return g.raw(a, false), nil
}

// convert is the statement storing x, converted by s, in field, whose conversion
// may fail (a duration in a unit it is not a whole number of).
func (g *command) convert(field string, s scalar, x string) string {
	g.hasErr, g.checked[field] = true, true
	return fmt.Sprintf("c.%s = %s", field, s.convErr(x))
}

// param is a required scalar: a constructor parameter.
func (g *command) param(a *cmdspec.Arg, s scalar) string {
	base := lowerFirst(argName(a.Name))
	if s.goType == "time.Time" && strings.HasPrefix(base, "unixTime") {
		base = "at" // HEXPIREAT's unix-time-seconds is a time.Time, whatever its unit
	}
	name := g.unique(base)
	g.params = append(g.params, name+" "+s.goType)
	g.fields = append(g.fields, name+" any")
	if s.convErr != nil {
		g.inits = append(g.inits, g.convert(name, s, name))
	} else {
		g.inits = append(g.inits, fmt.Sprintf("c.%s = %s", name, s.conv(name)))
	}
	if a.Token != "" {
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
	}
	if vectorArgs[g.spec.Name+" "+a.Name] {
		// After VALUES the server takes the vector as several arguments: its
		// dimension, then each number.
		g.emit = append(g.emit, fmt.Sprintf("for _, x := range vectorValues(c.%s) {\nv.add(x)\n}", name))
	} else {
		g.emit = append(g.emit, fmt.Sprintf("v.add(c.%s)", name))
	}
	g.minArgs = append(g.minArgs, s.zero)
	return name
}

// vectorArgs are the vector-set arguments (command and name) that take a vector as
// FP32's blob or as VALUES' numbers: package cmds's vectorValues lays out a []float64
// or []float32 as VALUES takes it.
var vectorArgs = map[string]bool{
	"vadd vector":            true,
	"vsim vector_or_element": true,
}

// listKind is how a list of scalars is given.
type listKind uint8

const (
	listRequired listKind = iota // a parameter that must not be empty
	listParam                    // a parameter that may be empty (EVAL's keys)
	listOption                   // an option method; nothing is sent when it is empty
)

// list is a list of scalars: a variadic (or slice) parameter, or an option.
func (g *command) list(a *cmdspec.Arg, s scalar, variadic, counted bool, kind listKind) string {
	name := g.unique(lowerFirst(plural(argName(a.Name))))
	typ := "[]" + s.goType
	switch {
	case kind == listOption:
	case variadic:
		g.params = append(g.params, name+" ..."+s.goType)
		g.minArgs = append(g.minArgs, s.zero)
	default:
		g.params = append(g.params, name+" "+typ)
		g.minArgs = append(g.minArgs, typ+"{"+s.zero+"}")
	}
	g.fields = append(g.fields, name+" "+typ)
	if kind != listOption {
		g.inits = append(g.inits, fmt.Sprintf("c.%s = %s", name, name))
	}
	var body []string
	if kind == listRequired {
		body = append(body, fmt.Sprintf("if len(c.%s) == 0 {\nv.fail(problemEmpty)\n}", name))
	}
	if counted {
		body = append(body, fmt.Sprintf("v.add(int64(len(c.%s)))", name))
	}
	if a.Token != "" && !a.MultipleToken {
		body = append(body, fmt.Sprintf("v.add(%q)", a.Token))
	}
	loop := "for _, x := range c." + name + " {\n"
	if a.Token != "" && a.MultipleToken {
		loop += fmt.Sprintf("v.add(%q)\n", a.Token)
	}
	loop += "v.add(" + s.conv("x") + ")\n}"
	body = append(body, loop)
	if kind == listOption {
		g.emit = append(g.emit, fmt.Sprintf("if len(c.%s) > 0 {\n%s\n}", name, strings.Join(body, "\n")))
	} else {
		g.emit = append(g.emit, body...)
	}
	return name
}

// elements is a required list of blocks of scalars (HSET's field value pairs): a
// variadic parameter of an element type.
func (g *command) elements(a *cmdspec.Arg, variadic, counted, optional bool) string {
	elem := g.elementType(a)
	if g.v.single && !optional && !counted {
		return g.element(a, elem)
	}
	name := g.unique(lowerFirst(plural(argName(a.Name))))
	if !optional {
		g.elementParam(elem, name, variadic)
	}
	g.fields = append(g.fields, name+" []"+elem.name)
	var body []string
	if !optional {
		body = append(body, fmt.Sprintf("if len(c.%s) == 0 {\nv.fail(problemEmpty)\n}", name))
	}
	if counted {
		body = append(body, fmt.Sprintf("v.add(int64(len(c.%s)))", name))
	}
	if a.Token != "" && !a.MultipleToken {
		body = append(body, fmt.Sprintf("v.add(%q)", a.Token))
	}
	loop := "for _, e := range c." + name + " {\n"
	if a.Token != "" && a.MultipleToken {
		loop += fmt.Sprintf("v.add(%q)\n", a.Token)
	}
	for _, f := range elem.fields {
		if f.token != "" {
			loop += fmt.Sprintf("v.add(%q)\n", f.token)
		}
		if f.name != "" {
			loop += "v.add(" + f.conv("e."+f.name) + ")\n"
		}
	}
	loop += "}"
	body = append(body, loop)
	if optional {
		g.emit = append(g.emit, fmt.Sprintf("if len(c.%s) > 0 {\n%s\n}", name, strings.Join(body, "\n")))
	} else {
		g.emit = append(g.emit, body...)
	}
	return name
}

// element is a list of blocks of which the form takes exactly one (ZADD INCR's
// score member): a parameter of the element type.
func (g *command) element(a *cmdspec.Arg, elem element) string {
	name := g.unique(lowerFirst(argName(a.Name)))
	g.params = append(g.params, name+" "+elem.name)
	g.minArgs = append(g.minArgs, elem.zero)
	g.fields = append(g.fields, name+" "+elem.name)
	g.inits = append(g.inits, fmt.Sprintf("c.%s = %s", name, name))
	for _, f := range elem.fields {
		if f.token != "" {
			g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", f.token))
		}
		if f.name != "" {
			g.emit = append(g.emit, "v.add("+f.conv("c."+name+"."+f.name)+")")
		}
	}
	return name
}

// elementParam is the constructor parameter name of a list of elem: variadic, or a
// slice when a parameter follows it.
func (g *command) elementParam(elem element, name string, variadic bool) {
	if variadic {
		g.params = append(g.params, name+" ..."+elem.name)
		g.minArgs = append(g.minArgs, elem.zero)
	} else {
		g.params = append(g.params, name+" []"+elem.name)
		g.minArgs = append(g.minArgs, "[]"+elem.name+"{"+elem.zero+"}")
	}
	g.inits = append(g.inits, fmt.Sprintf("c.%s = %s", name, name))
}

// parallelBlock reports a block of lists of scalars that go together element by
// element (XREAD's STREAMS key [key ...] id [id ...]).
func parallelBlock(args []*cmdspec.Arg) bool {
	if len(args) < 2 {
		return false
	}
	for _, a := range args {
		if !a.Multiple || a.Optional || a.Token != "" || a.Type == "block" || a.Type == "oneof" {
			return false
		}
		if s, ok := scalarOf(a); !ok || s.conv == nil {
			return false
		}
	}
	return true
}

// parallel is a block of parallel lists: one list of elements, sent a field of every
// element after another (keys first, then IDs).
func (g *command) parallel(a *cmdspec.Arg, variadic bool) string {
	elem := g.elementType(a)
	name := g.unique(lowerFirst(plural(argName(a.Name))))
	g.elementParam(elem, name, variadic)
	g.fields = append(g.fields, name+" []"+elem.name)
	g.emit = append(g.emit, fmt.Sprintf("if len(c.%s) == 0 {\nv.fail(problemEmpty)\n}", name))
	if a.Token != "" {
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
	}
	for _, f := range elem.fields {
		g.emit = append(g.emit, fmt.Sprintf("for _, e := range c.%s {\nv.add(%s)\n}", name, f.conv("e."+f.name)))
	}
	return name
}

// element is the Go type of one block of a list.
type element struct {
	name   string
	zero   string
	fields []elementField
}

type elementField struct {
	name, token string
	conv        func(string) string
}

// sharedElements are the element types of package cmds that commands share, by the
// names of their arguments.
var sharedElements = map[string]string{
	"field value":               "FieldValue",
	"key value":                 "KeyValue",
	"score member":              "Z",
	"longitude latitude member": "GeoLocation",
	"key id":                    "StreamID",
	"start-slot end-slot":       "SlotRange",
	"startslot endslot":         "SlotRange",
	"slot-start slot-last":      "SlotRange",
}

// sharedFields are the fields of a shared element type whose arguments the servers
// name differently (a slot range's start-slot, startslot and slot-start).
var sharedFields = map[string]string{
	"start-slot": "Start", "startslot": "Start", "slot-start": "Start",
	"end-slot": "End", "endslot": "End", "slot-last": "End",
}

func (g *command) elementType(a *cmdspec.Arg) element {
	var names []string
	for _, c := range a.Args {
		names = append(names, strings.ToLower(c.Name))
	}
	var e element
	shared, ok := sharedElements[strings.Join(names, " ")]
	if ok {
		e.name = shared
	} else {
		e.name = g.name + argName(a.Name)
		g.names = append(g.names, e.name)
	}
	var decl bytes.Buffer
	fmt.Fprintf(&decl, "// %s is one %s of %s.\ntype %s struct {\n", e.name, a.Name, g.name, e.name)
	var zero []string
	for _, c := range a.Args {
		if c.Type == "pure-token" {
			e.fields = append(e.fields, elementField{token: c.Token})
			continue
		}
		s, _ := scalarOf(c)
		f := elementField{name: argName(c.Name), token: c.Token, conv: s.conv}
		if field, renamed := sharedFields[strings.ToLower(c.Name)]; renamed && ok {
			f.name = field
		}
		e.fields = append(e.fields, f)
		fmt.Fprintf(&decl, "%s %s\n", f.name, s.goType)
		zero = append(zero, f.name+": "+s.zero)
	}
	decl.WriteString("}\n")
	if !ok {
		g.types = append(g.types, decl.String())
	}
	e.zero = e.name + "{" + strings.Join(zero, ", ") + "}"
	return e
}

// enum is a required choice among keywords: a parameter of an enumeration type.
func (g *command) enum(a *cmdspec.Arg) string {
	typ, first := g.enumType(a)
	return g.enumParam(a, typ, first)
}

// enumType returns the enumeration type of a choice among keywords, declaring it for
// the command unless the package has it, and its first value.
func (g *command) enumType(a *cmdspec.Arg) (typ, first string) {
	var tokens []string
	for _, alt := range a.Args {
		tokens = append(tokens, alt.Token)
	}
	if e, ok := sharedEnums[strings.Join(tokens, " ")]; ok {
		return e.typ, e.first
	}
	typ = g.name + argName(a.Name)
	for _, n := range g.names {
		if n == typ {
			return typ, g.name + tokenName(a.Args[0])
		}
	}
	g.names = append(g.names, typ)
	var decl bytes.Buffer
	fmt.Fprintf(&decl, "// %s is the %s argument of %s.\ntype %s string\n\n", typ, a.Name, g.name, typ)
	fmt.Fprintf(&decl, "// The values of %s.\nconst (\n", typ)
	for _, alt := range a.Args {
		c := g.name + tokenName(alt)
		g.names = append(g.names, c)
		fmt.Fprintf(&decl, "%s %s = %q\n", c, typ, alt.Token)
	}
	decl.WriteString(")\n")
	g.types = append(g.types, decl.String())
	return typ, g.name + tokenName(a.Args[0])
}

// sharedEnums are the enumerations of package cmds that commands share, by their
// keywords, with the first value.
var sharedEnums = map[string]struct{ typ, first string }{
	"LEFT RIGHT": {"Side", "Left"},
	"m km ft mi": {"Unit", "Meters"},
	// VSIM's, shared with its WithScores form.
	"ELE FP32 VALUES": {"VSimFormat", "VSimEle"},
}

// sharedEnum returns the package's enumeration of the keywords args, or "".
func sharedEnum(args []*cmdspec.Arg) string {
	var tokens []string
	for _, a := range args {
		tokens = append(tokens, a.Token)
	}
	return sharedEnums[strings.Join(tokens, " ")].typ
}

// enumParam is a constructor parameter of an enumeration type.
func (g *command) enumParam(a *cmdspec.Arg, typ, first string) string {
	name := g.unique(lowerFirst(argName(a.Name)))
	g.params = append(g.params, name+" "+typ)
	g.fields = append(g.fields, name+" any")
	g.inits = append(g.inits, fmt.Sprintf("c.%s = string(%s)", name, name))
	if a.Token != "" {
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
	}
	g.emit = append(g.emit, fmt.Sprintf("v.add(c.%s)", name))
	g.minArgs = append(g.minArgs, first)
	return name
}

// tokenName is the Go name of an argument that is sent as a keyword: from its
// keyword when it is a word, else from its name.
// wireToken is a keyword as it is sent: the specifications write MIGRATE's empty
// key, an empty argument, as the token "" in quotes.
func wireToken(token string) string {
	if token == `""` {
		return ""
	}
	return token
}

// choiceMethod names the method choosing alt of the choice a: after alt, or, when
// another method has that name, after the choice and alt (CLIENT LIST's NOT-TYPE
// normal is NotTypeNormal, TYPE normal being Normal).
func (g *command) choiceMethod(a, alt *cmdspec.Arg) string {
	name := tokenName(alt)
	if g.taken[name] || commandMethods[name] {
		name = tokenName(&cmdspec.Arg{Name: a.Name, Token: a.Token}) + name
	}
	return g.unique(name)
}

func tokenName(a *cmdspec.Arg) string {
	if a.Token == "" && a.Type == "block" && a.Args[0].Token != "" {
		a = a.Args[0] // BYRADIUS radius unit is ByRadius
	}
	if a.Token != "" && isWord(a.Token) {
		if n := argName(strings.ToLower(a.Token)); n != "" {
			return n
		}
	}
	return argName(a.Name)
}

func isWord(s string) bool {
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return s != ""
}

func allPureTokens(args []*cmdspec.Arg) bool {
	for _, a := range args {
		if a.Type != "pure-token" || a.Optional || a.Multiple {
			return false
		}
	}
	return true
}

// simpleBlock reports whether a block's arguments are all required scalars or
// keywords (with at most a counted or final list), so that they can be parameters.
func simpleBlock(args []*cmdspec.Arg) bool {
	for i, a := range args {
		if a.Optional {
			return false
		}
		switch {
		case a.Type == "pure-token":
		case a.Type == "oneof" && !a.Multiple && allPureTokens(a.Args):
		case a.Type == "block" || a.Type == "oneof":
			return false
		case a.Multiple:
			if i != len(args)-1 {
				return false
			}
			if s, ok := scalarOf(a); !ok || s.conv == nil {
				return false
			}
		default:
			if _, ok := scalarOf(a); !ok {
				return false
			}
		}
	}
	return true
}

// countedElements reports a block of a count and the list of element blocks it
// counts (HSETEX's FIELDS numfields field value [field value ...]): the elements are
// a parameter, the count computed.
func countedElements(args []*cmdspec.Arg) bool {
	return len(args) == 2 && isCount(args, 0) && args[1].Type == "block" && elementBlock(args[1].Args)
}

// elementBlock reports whether a block can be an element of a list: scalars and
// keywords only, none of them optional or repeated, and none that can fail.
func elementBlock(args []*cmdspec.Arg) bool {
	for _, a := range args {
		if a.Optional || a.Multiple || a.Type == "block" || a.Type == "oneof" {
			return false
		}
		if a.Type == "pure-token" {
			continue
		}
		if s, ok := scalarOf(a); !ok || s.conv == nil {
			return false
		}
	}
	return true
}

func plural(s string) string {
	switch {
	case strings.HasSuffix(s, "s"), strings.HasSuffix(s, "Data"), strings.HasSuffix(s, "Info"):
		return s
	case strings.HasSuffix(s, "y") && !strings.HasSuffix(s, "ey"):
		return s[:len(s)-1] + "ies"
	}
	return s + "s"
}

// raw is an argument whose shape has no typed form yet: the caller gives its words.
func (g *command) raw(a *cmdspec.Arg, optional bool) string {
	name := g.unique(lowerFirst(argName(a.Name)) + "Args")
	g.fields = append(g.fields, name+" []any")
	if optional {
		m := g.unique(argName(a.Name))
		g.addMethod(m, fmt.Sprintf("sets the %s argument from its words, as the server takes them: %s. This argument has no typed form yet.", a.Name, synopsis([]*cmdspec.Arg{a})),
			"args ...any", fmt.Sprintf("c.%s = args", name))
	} else {
		g.params = append(g.params, name+" []any")
		g.inits = append(g.inits, fmt.Sprintf("c.%s = %s", name, name))
		g.minArgs = append(g.minArgs, "[]any{"+rawZero(a)+"}")
	}
	g.emit = append(g.emit, fmt.Sprintf("for _, x := range c.%s {\nv.add(x)\n}", name))
	return name
}

// rawZero is the words of a's fewest-arguments form.
func rawZero(a *cmdspec.Arg) string {
	var words []string
	var walk func(a *cmdspec.Arg)
	walk = func(a *cmdspec.Arg) {
		if a.Optional {
			return
		}
		if a.Token != "" {
			words = append(words, fmt.Sprintf("%q", a.Token))
		}
		switch a.Type {
		case "pure-token":
		case "oneof":
			walk(a.Args[0])
		case "block":
			for _, c := range a.Args {
				walk(c)
			}
		default:
			words = append(words, `"1"`)
		}
	}
	walk(a)
	return strings.Join(words, ", ")
}

// addMethod adds an option method that sets fields and returns the changed copy.
func (g *command) addMethod(name, doc, params, body string) {
	var b bytes.Buffer
	b.WriteString(wrap(name+" "+doc, "// ", 88))
	fmt.Fprintf(&b, "func (c %s) %s(%s) %s {\n%s\nreturn c\n}\n", g.typ, name, params, g.typ, body)
	g.methods = append(g.methods, b.String())
}

// optional lays out an optional argument: an option method.
func (g *command) optional(a *cmdspec.Arg) error {
	if g.v.token != "" && a.Token == g.v.token {
		g.emit = append(g.emit, fmt.Sprintf("v.add(%q)", a.Token))
		return nil
	}
	if g.v.drop[a.Token] || g.v.drop[a.Name] {
		return nil
	}
	if g.v.require == a.Name {
		_, err := g.required(a, true, false)
		return err
	}
	switch {
	case a.Type == "pure-token":
		name := g.unique(lowerFirst(tokenName(a)))
		g.fields = append(g.fields, name+" bool")
		g.addMethod(g.unique(tokenName(a)), "adds "+a.Token+since(a)+".", "", fmt.Sprintf("c.%s = true", name))
		g.emit = append(g.emit, fmt.Sprintf("if c.%s {\nv.add(%q)\n}", name, a.Token))
	case a.Type == "oneof" && !a.Multiple && allPureTokens(a.Args) && sharedEnum(a.Args) != "":
		// A choice among a shared enumeration (GEODIST's unit): one method taking it.
		typ, _ := g.enumType(a)
		field := g.unique(lowerFirst(argName(a.Name)))
		g.fields = append(g.fields, field+" any")
		g.addMethod(g.unique(argName(a.Name)), "adds "+synopsis([]*cmdspec.Arg{a})+since(a)+".", "value "+typ, fmt.Sprintf("c.%s = string(value)", field))
		g.emit = append(g.emit, fmt.Sprintf("if c.%s != nil {\nv.add(c.%s)\n}", field, field))
	case a.Type == "oneof" && !a.Multiple:
		return g.choice(a, false)
	case a.Type == "block" && !a.Multiple && optionBlock(a.Args):
		g.optionalBlock(a)
	case a.Type == "block" && a.Multiple && elementBlock(a.Args):
		field := g.elements(a, true, false, true)
		elem := strings.TrimPrefix(g.fieldType(field), "[]")
		g.addMethod(g.unique(tokenName(a)), "adds "+synopsis([]*cmdspec.Arg{a})+since(a)+".", "elems ..."+elem, fmt.Sprintf("c.%s = elems", field))
	case a.Multiple:
		s, ok := scalarOf(a)
		if !ok || s.conv == nil {
			g.raw(a, true)
			return nil
		}
		field := g.list(a, s, true, false, listOption)
		g.addMethod(g.unique(tokenName(a)), "adds "+synopsis([]*cmdspec.Arg{a})+since(a)+".", "values ..."+s.goType, fmt.Sprintf("c.%s = values", field))
	default:
		s, ok := scalarOf(a)
		if !ok {
			g.raw(a, true)
			return nil
		}
		field := g.unique(lowerFirst(argName(a.Name)))
		g.fields = append(g.fields, field+" any")
		var body string
		if s.convErr != nil {
			body = g.convert(field, s, "value")
		} else {
			body = fmt.Sprintf("c.%s = %s", field, s.conv("value"))
		}
		g.addMethod(g.unique(tokenName(a)), "adds "+synopsis([]*cmdspec.Arg{a})+since(a)+".", "value "+s.goType, body)
		emit := fmt.Sprintf("if c.%s != nil {\n", field)
		if a.Token != "" {
			emit += fmt.Sprintf("v.add(%q)\n", a.Token)
		}
		g.emit = append(g.emit, emit+fmt.Sprintf("v.add(c.%s)\n}", field))
	}
	return nil
}

func (g *command) fieldType(name string) string {
	for _, f := range g.fields {
		if n, t, ok := strings.Cut(f, " "); ok && n == name {
			return t
		}
	}
	return ""
}

// optionalBlock is an optional block of scalars (LIMIT offset count): one method
// taking its required arguments; each optional argument inside it (COUNT count's
// ANY) is a method of its own, named after the block's, that takes effect with it.
func (g *command) optionalBlock(a *cmdspec.Arg) {
	set := g.unique(lowerFirst(argName(a.Name)))
	g.fields = append(g.fields, set+" bool")
	method := g.unique(tokenName(a))
	// The arguments' fields are named after the option's ("range_" is range's, so
	// that it is not the keyword; its fields are rangeStart...).
	prefix := strings.TrimSuffix(set, "_")
	params, body, emit := g.block(prefix, a, func(c *cmdspec.Arg) string { return g.innerOption(method, prefix, c) })
	body = append([]string{fmt.Sprintf("c.%s = true", set)}, body...)
	g.addMethod(method, "adds "+synopsis([]*cmdspec.Arg{a})+since(a)+".", strings.Join(params, ", "), strings.Join(body, "\n"))
	g.emit = append(g.emit, fmt.Sprintf("if c.%s {\n%s\n}", set, strings.Join(emit, "\n")))
}

// innerOption is an optional argument inside an optional block: a method named
// after the block's method, and the statement laying it out.
func (g *command) innerOption(block, prefix string, a *cmdspec.Arg) string {
	doc := "adds " + synopsis([]*cmdspec.Arg{a}) + " to " + block + "'s arguments" + since(a) + "; it is sent only with them."
	if a.Type == "block" {
		// A block inside the option (BITCOUNT's [start [end [BYTE | BIT]]]): a method
		// named after its first argument, taking its required ones; its own options
		// are methods named after the outer option's.
		set := g.unique(prefix + argName(a.Args[0].Name) + "Set")
		g.fields = append(g.fields, set+" bool")
		params, body, emit := g.block(prefix, a, func(c *cmdspec.Arg) string { return g.innerOption(block, prefix, c) })
		body = append([]string{fmt.Sprintf("c.%s = true", set)}, body...)
		g.addMethod(g.unique(block+tokenName(a.Args[0])), doc, strings.Join(params, ", "), strings.Join(body, "\n"))
		return fmt.Sprintf("if c.%s {\n%s\n}", set, strings.Join(emit, "\n"))
	}
	field := g.unique(prefix + argName(a.Name))
	name := g.unique(block + tokenName(a))
	switch {
	case a.Type == "pure-token":
		g.fields = append(g.fields, field+" bool")
		g.addMethod(name, doc, "", fmt.Sprintf("c.%s = true", field))
		return fmt.Sprintf("if c.%s {\nv.add(%q)\n}", field, a.Token)
	case a.Type == "oneof":
		typ, _ := g.enumType(a)
		g.fields = append(g.fields, field+" any")
		g.addMethod(name, doc, "value "+typ, fmt.Sprintf("c.%s = string(value)", field))
		return fmt.Sprintf("if c.%s != nil {\nv.add(c.%s)\n}", field, field)
	}
	s, _ := scalarOf(a)
	g.fields = append(g.fields, field+" any")
	if s.convErr != nil {
		g.addMethod(name, doc, "value "+s.goType, g.convert(field, s, "value"))
	} else {
		g.addMethod(name, doc, "value "+s.goType, fmt.Sprintf("c.%s = %s", field, s.conv("value")))
	}
	emit := fmt.Sprintf("if c.%s != nil {\n", field)
	if a.Token != "" {
		emit += fmt.Sprintf("v.add(%q)\n", a.Token)
	}
	return emit + fmt.Sprintf("v.add(c.%s)\n}", field)
}

// optionBlock reports an optional block whose required arguments make a simpleBlock
// and whose optional ones are keywords, scalars or choices among keywords.
func optionBlock(args []*cmdspec.Arg) bool {
	var required []*cmdspec.Arg
	for _, a := range args {
		if !a.Optional {
			required = append(required, a)
			continue
		}
		switch {
		case a.Multiple:
			return false
		case a.Type == "pure-token":
		case a.Type == "oneof":
			if !allPureTokens(a.Args) {
				return false
			}
		case a.Type == "block":
			if !optionBlock(a.Args) {
				return false
			}
		default:
			if _, ok := scalarOf(a); !ok {
				return false
			}
		}
	}
	return len(required) > 0 && simpleBlock(required)
}

// block lays out a block of scalars (a simpleBlock) set by one method: the method's
// parameters, the statements of its body and those laying the block out. Its fields
// are named after prefix; inner lays out an optional argument inside it (an
// optionBlock's).
func (g *command) block(prefix string, a *cmdspec.Arg, inner func(*cmdspec.Arg) string) (params, body, emit []string) {
	if a.Token != "" {
		emit = append(emit, fmt.Sprintf("v.add(%q)", a.Token))
	}
	for _, c := range a.Args {
		if c.Optional {
			emit = append(emit, inner(c))
			continue
		}
		if c.Type == "pure-token" {
			emit = append(emit, fmt.Sprintf("v.add(%q)", c.Token))
			continue
		}
		field := g.unique(prefix + argName(c.Name))
		p := lowerFirst(argName(c.Name))
		if c.Token != "" {
			emit = append(emit, fmt.Sprintf("v.add(%q)", c.Token))
		}
		if c.Type == "oneof" {
			typ, _ := g.enumType(c)
			g.fields = append(g.fields, field+" any")
			params = append(params, p+" "+typ)
			body = append(body, fmt.Sprintf("c.%s = string(%s)", field, p))
			emit = append(emit, fmt.Sprintf("v.add(c.%s)", field))
			continue
		}
		s, _ := scalarOf(c)
		if c.Multiple {
			g.fields = append(g.fields, field+" []"+s.goType)
			params = append(params, p+" ..."+s.goType)
			body = append(body, fmt.Sprintf("c.%s = %s", field, p))
			emit = append(emit, "for _, x := range c."+field+" {\nv.add("+s.conv("x")+")\n}")
			continue
		}
		g.fields = append(g.fields, field+" any")
		params = append(params, p+" "+s.goType)
		if s.convErr != nil {
			body = append(body, g.convert(field, s, p))
		} else {
			body = append(body, fmt.Sprintf("c.%s = %s", field, s.conv(p)))
		}
		emit = append(emit, fmt.Sprintf("v.add(c.%s)", field))
	}
	return params, body, emit
}

// leadingToken is the keyword that opens every use of alt, if one does: its own
// (CANCEL), or its first argument's when alt is a block (BYPOLYGON num-vertices).
// A repeated alternative (IMPORT ... [IMPORT ...]) has none: the caller gives each.
func leadingToken(alt *cmdspec.Arg) string {
	switch {
	case alt.Multiple:
		return ""
	case alt.Token != "":
		return alt.Token
	case alt.Type == "block" && len(alt.Args) > 0 && !alt.Args[0].Multiple:
		return alt.Args[0].Token
	}
	return ""
}

// choice is a one-of argument whose alternatives are not all keywords: one method per
// alternative. A required choice that was not made fails the command before it is
// sent.
func (g *command) choice(a *cmdspec.Arg, required bool) error {
	field := g.unique(lowerFirst(argName(a.Name)))
	g.fields = append(g.fields, field+" uint8")
	var cases []string
	alts := a.Args
	n := 0
	for i := 0; i < len(alts); i++ {
		alt := alts[i]
		n++
		k := n
		set := fmt.Sprintf("c.%s = %d", field, k)
		// An expiration given as seconds or milliseconds (EX/PX), or as a Unix time
		// in either (EXAT/PXAT), is one method taking a time.Duration or time.Time.
		if i+1 < len(alts) && alt.Token == "EX" && alts[i+1].Token == "PX" {
			tok, val := g.unique(field+"Token"), g.unique(field+"Value")
			g.fields = append(g.fields, tok+" any", val+" any")
			g.hasErr, g.checked[val] = true, true
			// A d of 0 is no expiration, as go-redis's Set(ctx, key, value, 0) is,
			// rather than the EX 0 the server refuses.
			g.addMethod(g.unique("Expire"), "sets the expiration: EX seconds when d is a whole number of seconds, else PX milliseconds. A d of 0 sends none of these options (it undoes an earlier choice of this option group), as go-redis's Set with an expiration of 0 sends none; it does not remove a TTL the key has.", "d time.Duration",
				fmt.Sprintf("if d == 0 {\nc.%s = 0\nreturn c\n}\n%s\nc.%s, c.%s = expiration(d, %q, %q)", field, set, tok, val, "EX", "PX"))
			cases = append(cases, fmt.Sprintf("case %d:\nv.add(c.%s)\nv.add(c.%s)", k, tok, val))
			i++
			continue
		}
		if i+1 < len(alts) && alt.Token == "EXAT" && alts[i+1].Token == "PXAT" {
			tok, val := g.unique(field+"AtToken"), g.unique(field+"AtValue")
			g.fields = append(g.fields, tok+" any", val+" any")
			g.addMethod(g.unique("ExpireAt"), "sets the expiration time: EXAT in Unix seconds when t is a whole second, else PXAT in milliseconds.", "t time.Time",
				fmt.Sprintf("%s\nc.%s, c.%s = expirationAt(t, %q, %q)", set, tok, val, "EXAT", "PXAT"))
			cases = append(cases, fmt.Sprintf("case %d:\nv.add(c.%s)\nv.add(c.%s)", k, tok, val))
			i++
			continue
		}
		method := g.choiceMethod(a, alt)
		doc := "chooses " + synopsis([]*cmdspec.Arg{alt}) + since(alt) + "."
		switch {
		case alt.Type == "pure-token":
			g.addMethod(method, doc, "", set)
			cases = append(cases, fmt.Sprintf("case %d:\nv.add(%q)", k, wireToken(alt.Token)))
		case alt.Type == "block" && !alt.Multiple && simpleBlock(alt.Args):
			params, body, emit := g.block(field, alt, nil)
			body = append([]string{set}, body...)
			g.addMethod(method, doc, strings.Join(params, ", "), strings.Join(body, "\n"))
			cases = append(cases, fmt.Sprintf("case %d:\n%s", k, strings.Join(emit, "\n")))
		default:
			s, ok := scalarOf(alt)
			if !ok || alt.Multiple {
				f := g.unique(field + argName(alt.Name) + "Args")
				g.fields = append(g.fields, f+" []any")
				how, lead := " This alternative has no typed form yet: give its words as the server takes them.", ""
				if tok := leadingToken(alt); tok != "" {
					// The keyword that chose the alternative is the method's to send.
					how = fmt.Sprintf(" This alternative has no typed form yet: give the words after %s as the server takes them; %s itself is sent for you.", tok, tok)
					lead = fmt.Sprintf("v.add(%q)\n", tok)
				}
				g.addMethod(method, doc+how, "args ...any", fmt.Sprintf("%s\nc.%s = args", set, f))
				cases = append(cases, fmt.Sprintf("case %d:\n%sfor _, x := range c.%s {\nv.add(x)\n}", k, lead, f))
				if required && k == 1 {
					g.minOpts = append(g.minOpts, "."+method+"("+rawZero(&cmdspec.Arg{Type: "block", Args: []*cmdspec.Arg{alt}})+")")
				}
				continue
			}
			f := g.unique(field + argName(alt.Name))
			g.fields = append(g.fields, f+" any")
			var body string
			if s.convErr != nil {
				body = set + "\n" + g.convert(f, s, "value")
			} else {
				body = fmt.Sprintf("%s\nc.%s = %s", set, f, s.conv("value"))
			}
			g.addMethod(method, doc, "value "+s.goType, body)
			emit := fmt.Sprintf("case %d:\n", k)
			if alt.Token != "" {
				emit += fmt.Sprintf("v.add(%q)\n", alt.Token)
			}
			cases = append(cases, emit+fmt.Sprintf("v.add(c.%s)", f))
		}
		if required && k == 1 {
			g.minOpts = append(g.minOpts, "."+method+"("+g.zeroArgsOf(alt)+")")
		}
	}
	if a.Token != "" {
		// The choice's own keyword (ZUNION's AGGREGATE, CLIENT LIST's TYPE) goes before
		// whichever alternative was chosen.
		for i, c := range cases {
			head, body, _ := strings.Cut(c, "\n")
			cases[i] = fmt.Sprintf("%s\nv.add(%q)\n%s", head, a.Token, body)
		}
	}
	if required {
		cases = append(cases, "default:\nv.fail(problemChoice)")
	}
	g.emit = append(g.emit, fmt.Sprintf("switch c.%s {\n%s\n}", field, strings.Join(cases, "\n")))
	return nil
}

// zeroArgsOf is the arguments of the fewest-arguments call of an alternative's method.
func (g *command) zeroArgsOf(a *cmdspec.Arg) string {
	switch a.Type {
	case "pure-token":
		return ""
	case "block":
		if !simpleBlock(a.Args) {
			return rawZero(a)
		}
		var zs []string
		for _, c := range a.Args {
			switch c.Type {
			case "pure-token":
			case "oneof":
				_, first := g.enumType(c)
				zs = append(zs, first)
			default:
				s, _ := scalarOf(c)
				zs = append(zs, s.zero)
			}
		}
		return strings.Join(zs, ", ")
	}
	s, ok := scalarOf(a)
	if !ok || a.Multiple {
		return rawZero(a)
	}
	return s.zero
}

func since(a *cmdspec.Arg) string {
	if a.Since == "" {
		return ""
	}
	return " (since " + a.Since + ")"
}

// synopsis writes arguments as the servers' documentation does: key value [NX | XX].
func synopsis(args []*cmdspec.Arg) string {
	var parts []string
	for _, a := range args {
		parts = append(parts, synopsisOf(a))
	}
	return strings.Join(parts, " ")
}

func synopsisOf(a *cmdspec.Arg) string {
	var s string
	switch a.Type {
	case "pure-token":
		s = a.Token
	case "oneof":
		var alts []string
		for _, c := range a.Args {
			alts = append(alts, synopsisOf(c))
		}
		s = strings.Join(alts, " | ")
		if !a.Optional {
			s = "<" + s + ">"
		}
		if a.Token != "" {
			s = a.Token + " " + s
		}
	case "block":
		s = synopsis(a.Args)
		if a.Token != "" {
			s = a.Token + " " + s
		}
	default:
		s = a.Name
		if a.Display != "" {
			s = a.Display
		}
		if a.Token != "" {
			s = a.Token + " " + s
		}
	}
	if a.Multiple {
		s = s + " [" + s + " ...]"
	}
	if a.Optional {
		s = "[" + s + "]"
	}
	return s
}
