package main

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/respire/respire/internal/cmdspec"
)

// render writes the command's constructor, value type and methods.
func (g *command) render(b *bytes.Buffer) {
	c := g.spec
	words := strings.Join(c.Words(), " ")
	summary := strings.TrimSpace(c.Summary)
	if g.v.suffix != "" {
		// The vector-set module's summaries end without a full stop.
		if !strings.HasSuffix(summary, ".") {
			summary += "."
		}
		summary += " This form " + g.variantDoc() + "."
	}
	b.WriteString(wrap(fmt.Sprintf("%s builds %s: %s", g.name, words, lowerSentence(summary)), "// ", 88))
	b.WriteString("//\n")
	fmt.Fprintf(b, "//\t%s\n", strings.TrimSpace(words+" "+synopsis(g.formArgs(c.Args))))
	b.WriteString("//\n")
	var facts []string
	if c.Complexity != "" {
		facts = append(facts, "Complexity: "+strings.TrimSuffix(strings.TrimSpace(c.Complexity), ".")+".")
	}
	facts = append(facts, g.availability())
	if g.differ {
		facts = append(facts, "Redis and Valkey describe its arguments differently; these are the fuller description's, and the server may refuse an option it does not have.")
	}
	b.WriteString(wrap(strings.Join(facts, " "), "// ", 88))
	if c.Deprecated != "" {
		b.WriteString("//\n")
		dep := "Deprecated: since " + c.Deprecated
		if c.ReplacedBy != "" {
			dep += ", replaced by " + strings.ReplaceAll(c.ReplacedBy, "`", "")
		}
		b.WriteString(wrap(dep+".", "// ", 88))
	}
	if len(g.inits) == 0 {
		fmt.Fprintf(b, "func %s(%s) %s { return %s{} }\n\n", g.name, strings.Join(g.params, ", "), g.typ, g.typ)
	} else {
		fmt.Fprintf(b, "func %s(%s) %s {\nvar c %s\n%s\nreturn c\n}\n\n", g.name, strings.Join(g.params, ", "), g.typ, g.typ, strings.Join(g.inits, "\n"))
	}

	fmt.Fprintf(b, "// %s is the %s command built by %s; its methods add options and run it.\n", g.typ, words, g.name)
	fields := g.fields
	if len(fields) == 0 {
		fmt.Fprintf(b, "type %s struct{}\n\n", g.typ)
	} else {
		fmt.Fprintf(b, "type %s struct {\n%s\n}\n\n", g.typ, strings.Join(fields, "\n"))
	}
	for _, t := range g.types {
		b.WriteString(t + "\n")
	}
	for _, m := range g.methods {
		b.WriteString(m + "\n")
	}

	fmt.Fprintf(b, "func (c *%s) argv() (v argv) {\n", g.typ)
	emit := addChecked.ReplaceAllStringFunc(strings.Join(g.emit, "\n"), func(add string) string {
		if g.checked[addChecked.FindStringSubmatch(add)[1]] {
			return strings.Replace(add, "v.add(", "v.check(", 1) + "\n" + add
		}
		return add
	})
	if g.bounded() {
		// Stored in place rather than through add: add's pointer receiver is an
		// indirect store, which escape analysis takes for a store to the heap,
		// and the caller's arguments would follow.
		emit = addInPlace.ReplaceAllString(emit, "v.fixed[v.n] = $1\nv.n++")
	}
	fmt.Fprintf(b, "%s\nreturn v\n}\n\n", emit)

	r := g.reply
	fmt.Fprintf(b, "// Do runs the command with r (a *respire.Client or *respire.Tx).\n")
	if when := nullWhen(c.Reply); when != "" && g.reply != replyValue {
		b.WriteString(wrap("A null reply is the error Nil: "+lowerSentence(when)+".", "// ", 88))
	}
	// A command of a fixed layout hands its arguments over as a slice literal, which
	// stays on the caller's stack at their size, rather than copying an argv of
	// fixedArgs slots: a short command's cost is then the client's alone.
	layout, bad := "v := c.argv()\n", "v.args(), v.bad"
	if args, ok := g.fixedLayout(); ok {
		layout, bad = "", "[]any{"+strings.Join(args, ", ")+"}, problem{}"
	}
	fmt.Fprintf(b, "func (c %s) Do(ctx context.Context, r Doer) (%s, error) {\n%sreturn %s(run(ctx, r, %s, %q))\n}\n\n", g.typ, r.goType, layout, r.decode, bad, words)
	if g.cacheable() {
		fmt.Fprintf(b, "// Cached runs the command through cl's client-side cache (Client.DoCached), keeping\n// its reply for at most ttl.\n")
		fmt.Fprintf(b, "func (c %s) Cached(ctx context.Context, cl *respire.Client, ttl time.Duration) (%s, error) {\n%sreturn %s(cached(ctx, cl, ttl, %s, %q))\n}\n\n", g.typ, r.goType, layout, r.decode, bad, words)
	}
	fmt.Fprintf(b, "// In queues the command in p; its reply is read from the Reply after p.Exec.\n")
	fmt.Fprintf(b, "func (c %s) In(p *Pipeline) Reply[%s] {\n%sreturn Reply[%s]{p.queue(%s, %q), %s}\n}\n\n", g.typ, r.goType, layout, r.goType, bad, words, r.decode)
	fmt.Fprintf(b, "// Args returns the command's arguments, as Client.Do and Pipeline.Do take them.\n")
	fmt.Fprintf(b, "func (c %s) Args() []any {\nv := c.argv()\nreturn v.list()\n}\n\n", g.typ)
}

// addChecked matches a statement adding one field of the command.
var addChecked = regexp.MustCompile(`(?m)^v\.add\(c\.(\w+)\)$`)

// addInPlace matches a statement adding one argument.
var addInPlace = regexp.MustCompile(`(?m)^v\.add\((.*)\)$`)

// fixedLayout returns the arguments of a command that always lays out the same ones,
// each an expression of one line, and that records no problem: GET, HGET, INCR.
func (g *command) fixedLayout() ([]string, bool) {
	if g.hasErr {
		return nil, false
	}
	var args []string
	for _, e := range g.emit {
		m := addInPlace.FindStringSubmatch(e)
		if m == nil || m[0] != e {
			return nil, false
		}
		args = append(args, m[1])
	}
	return args, true
}

// bounded reports a command that never has more than fixedArgs arguments: no lists,
// few enough options. Each statement of emit lays out one argument; a switch lays out
// one of its cases.
func (g *command) bounded() bool {
	most := 0
	for _, e := range g.emit {
		if strings.Contains(e, "for _, ") {
			return false
		}
		if !strings.HasPrefix(e, "switch ") {
			most += strings.Count(e, "v.add(")
			continue
		}
		widest := 0
		for _, c := range regexp.MustCompile(`\n(case [0-9]+|default):`).Split(e, -1) {
			widest = max(widest, strings.Count(c, "v.add("))
		}
		most += widest
	}
	return most <= fixedArgs
}

// fixedArgs is package cmds's fixedArgs: how many arguments fit in place.
const fixedArgs = 16

// formArgs returns args as the command's form takes them, for its synopsis: without
// the arguments it leaves out, with those it always sends or requires made required.
func (g *command) formArgs(args []*cmdspec.Arg) []*cmdspec.Arg {
	var out []*cmdspec.Arg
	for _, a := range args {
		if a.Optional && (g.v.drop[a.Token] || g.v.drop[a.Name]) {
			continue
		}
		form := *a
		if a.Optional && (g.v.token != "" && a.Token == g.v.token || g.v.require == a.Name) {
			form.Optional = false
		}
		form.Args = g.formArgs(a.Args)
		out = append(out, &form)
	}
	return out
}

func (g *command) variantDoc() string {
	switch {
	case g.v.token != "":
		return "sends " + g.v.token
	case g.v.require != "":
		return "takes " + g.v.require
	}
	return ""
}

// availability says since when and on which servers the command exists.
func (g *command) availability() string {
	c := g.spec
	switch {
	case c.Group == "vector_set":
		return "Since Redis " + c.Since + ", in its vector-set module; Redis only (not in Valkey 9.1)."
	case g.only == "Valkey 9.1":
		return "Since Valkey " + c.Since + "; Valkey only (not in Redis 8.6)."
	case g.only == "Redis 8.6":
		return "Since Redis " + c.Since + "; Redis only (not in Valkey 9.1)."
	}
	if g.since != "" {
		return "Since " + g.since + "; Redis and Valkey."
	}
	return "Since " + c.Since + "; Redis and Valkey."
}

// cacheable reports a read of one key whose reply changes only when the key does:
// what the client-side cache keeps (Client.DoCached refuses the rest).
func (g *command) cacheable() bool {
	c := g.spec
	if !c.HasFlag("READONLY") || c.HasFlag("BLOCKING") || c.Group == "scripting" || len(c.KeySpecs) != 1 || notCached[c.Name] {
		return false
	}
	for _, t := range c.Tips {
		// NONDETERMINISTIC_OUTPUT_ORDER (HGETALL, SMEMBERS) is fine: the order may
		// differ, the content only changes with the key.
		if strings.EqualFold(t, "NONDETERMINISTIC_OUTPUT") {
			return false
		}
	}
	ks := c.KeySpecs[0]
	return ks.Begin == "index" && ks.Find == "range" && ks.LastKey == 0
}

// notCached are the reads of one key whose output the specifications call
// deterministic that the client-side cache still refuses (package respire's
// uncacheable list): the key's expiry is read with every cached reply already, and a
// hash field's expiry is the same kind of read. TestCachedCommandsAreCacheable fails
// when the cache refuses a command offered as Cached.
var notCached = map[string]bool{"expiretime": true, "pexpiretime": true, "hexpiretime": true, "hpexpiretime": true}

// minimal is the expression building the command with its fewest arguments.
func (g *command) minimal() string {
	return g.name + "(" + strings.Join(g.minArgs, ", ") + ")" + strings.Join(g.minOpts, "")
}

// lowerSentence lowers the first letter of a summary that continues a sentence,
// unless it begins with a name in capitals.
func lowerSentence(s string) string {
	if len(s) > 1 && s[0] >= 'A' && s[0] <= 'Z' && !(s[1] >= 'A' && s[1] <= 'Z') {
		return strings.ToLower(s[:1]) + s[1:]
	}
	return s
}
