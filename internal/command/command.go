package command

import (
	"strings"

	"github.com/respire/respire/internal/argkind"
)

// Flags is the set of COMMAND flags of a command.
type Flags uint32

// The command flags Redis 7.0 reports in COMMAND. The descriptions are the server's
// meaning; see https://redis.io/commands/command/.
const (
	FlagWrite           Flags = 1 << iota // may modify the keyspace
	FlagReadonly                          // reads keys and never modifies them
	FlagDenyOOM                           // may grow memory use; refused when over maxmemory
	FlagModule                            // implemented by a module
	FlagAdmin                             // administrative
	FlagPubsub                            // publish/subscribe
	FlagNoscript                          // not allowed from scripts
	FlagBlocking                          // may block the client (see IsBlocking for when it really does)
	FlagLoading                           // allowed while the server loads its data
	FlagStale                             // allowed on a replica with stale data
	FlagSkipMonitor                       // not shown to MONITOR
	FlagSkipSlowlog                       // not recorded in the slow log
	FlagAsking                            // accepted on an importing slot (cluster)
	FlagFast                              // O(1) or O(log N)
	FlagNoAuth                            // allowed before authentication
	FlagMayReplicate                      // may be replicated even without writing
	FlagSentinel                          // available in Sentinel mode
	FlagOnlySentinel                      // available only in Sentinel mode
	FlagNoMandatoryKeys                   // may take zero keys
	FlagProtected                         // disabled unless enabled in configuration
	FlagNoAsyncLoading                    // refused during asynchronous loading
	FlagNoMulti                           // not allowed in MULTI
	FlagMovableKeys                       // key positions depend on the arguments
	FlagAllowBusy                         // allowed while a script or function is busy
	FlagModuleNoCluster                   // module command refused in cluster mode
)

// KeySpecFlags is the set of flags of one key specification.
type KeySpecFlags uint16

// The key specification flags of Redis 7.0. See
// https://redis.io/docs/reference/key-specs/#flags.
const (
	KeySpecRO            KeySpecFlags = 1 << iota // read-only access
	KeySpecRW                                     // read and write
	KeySpecOW                                     // overwrite without reading
	KeySpecRM                                     // removes the key
	KeySpecAccess                                 // returns, copies or uses the value
	KeySpecUpdate                                 // updates the value
	KeySpecInsert                                 // adds data, never removes
	KeySpecDelete                                 // removes data
	KeySpecNotKey                                 // not a key (a shard channel) but hashed like one
	KeySpecIncomplete                             // may not find every key; the server uses code instead
	KeySpecVariableFlags                          // flags depend on the arguments
)

// BeginKind is how the search for keys begins.
type BeginKind uint8

// The begin_search types. The zero value is BeginUnknown, which finds nothing.
const (
	BeginUnknown BeginKind = iota // the specification cannot be evaluated
	BeginIndex                    // keys begin at a fixed argument index
	BeginKeyword                  // keys begin just after a keyword
)

// BeginSearch is where the search for a key specification's keys begins.
type BeginSearch struct {
	Kind BeginKind
	// Pos is the argument index of the first key (BeginIndex), counting the command
	// name as 0.
	Pos int
	// Keyword is the keyword after which the keys begin (BeginKeyword), matched without
	// regard to case.
	Keyword string
	// StartFrom is the index where the search for Keyword starts (BeginKeyword). A
	// negative value counts from the end and searches backwards.
	StartFrom int
}

// FindKind is how keys are found once the search has begun.
type FindKind uint8

// The find_keys types. The zero value is FindUnknown, which finds nothing.
const (
	FindUnknown FindKind = iota // the specification cannot be evaluated
	FindRange                   // keys are a range of arguments
	FindKeynum                  // an argument gives the number of keys
)

// FindKeys is how a key specification's keys are found, relative to where the search
// began.
type FindKeys struct {
	Kind FindKind
	// LastKey is the index of the last key relative to the first (FindRange): 0 for one
	// key; negative counts from the end of the arguments, -1 being the last.
	LastKey int
	// KeyStep is the distance between keys (FindRange and FindKeynum), 2 for MSET.
	KeyStep int
	// Limit, when LastKey is -1 and Limit > 1, says the keys are the first 1/Limit of
	// the arguments that remain (FindRange): XREAD's STREAMS k1 k2 id1 id2 has Limit 2.
	Limit int
	// KeyNumIdx is the index, relative to the beginning, of the argument that holds the
	// number of keys (FindKeynum).
	KeyNumIdx int
	// FirstKey is the index, relative to the beginning, of the first key (FindKeynum).
	FirstKey int
}

// KeySpec is one key specification of a command.
type KeySpec struct {
	Begin BeginSearch
	Find  FindKeys
	Flags KeySpecFlags
}

// RequestPolicy is where a Cluster client sends a command, from the server's command
// tip request_policy (https://redis.io/docs/reference/command-tips/).
type RequestPolicy uint8

// The request policies. The zero value, RequestDefault, is a command without the tip:
// it goes where its keys hash, a keyless one to any node.
const (
	RequestDefault    RequestPolicy = iota // by its keys; keyless: any one node
	RequestAllNodes                        // every node, masters and replicas (CONFIG SET)
	RequestAllShards                       // every master (FLUSHALL, DBSIZE)
	RequestMultiShard                      // each key to its own shard (MSET, DEL)
	RequestSpecial                         // a way of its own that the tips do not describe (SCAN)
)

// ResponsePolicy is how a Cluster client combines the replies of a command sent to
// several nodes, from the server's command tip response_policy.
type ResponsePolicy uint8

// The response policies. The zero value, ResponseDefault, is a command without the
// tip: a keyless command's arrays are concatenated and its maps merged.
const (
	ResponseDefault       ResponsePolicy = iota // arrays concatenated, maps merged
	ResponseOneSucceeded                        // one success is enough (SCRIPT KILL)
	ResponseAllSucceeded                        // any error fails it; else one reply
	ResponseAggLogicalAnd                       // integers (element-wise for arrays) AND-ed
	ResponseAggLogicalOr                        // integers (element-wise for arrays) OR-ed
	ResponseAggMin                              // the least integer (WAIT)
	ResponseAggMax                              // the greatest integer
	ResponseAggSum                              // the sum of the integers (DBSIZE)
	ResponseSpecial                             // combined in a way of its own (INFO)
)

// Info describes one command or subcommand.
type Info struct {
	// Name is the lower-case command name; for a subcommand it is "container|sub", as
	// the server names it ("xinfo|stream").
	Name string
	// Arity is the number of arguments including the name: exact when positive, a
	// minimum when negative. A subcommand's arity counts both names.
	Arity int
	// Flags are the command's COMMAND flags.
	Flags Flags
	// KeySpecs are the command's key specifications, in the server's order.
	KeySpecs []KeySpec
	// Request and Response are the command's Cluster tips: which nodes it goes to
	// and how their replies combine.
	Request  RequestPolicy
	Response ResponsePolicy
	// Sub maps lower-case subcommand names ("stream") to their entries. It is nil for
	// commands that are not containers.
	Sub map[string]*Info

	// oneKeyFirst caches what KeySpecs say for most commands, computed once when the
	// entry is made (OneKeyFirst); false in an entry built by hand.
	oneKeyFirst bool
}

// OneKeyFirst reports whether the command's only key is its first argument (args[1])
// whatever its other arguments are, as for GET, SET, HGET or INCR: its key positions,
// its Cluster slot and its prefixed key need none of the key specifications'
// evaluation, which costs as much as hashing the key. It is false for commands of
// several keys or none, of a key elsewhere (OBJECT ENCODING k), of keys that move with
// the arguments, and of a shard channel (SPUBLISH), which is no key in the keyspace.
//
// The generated table and FromSpec compute it once, when they make the entry; an
// entry built by hand reports false, and its keys are found by evaluating its key
// specifications, with the same result.
func (info *Info) OneKeyFirst() bool { return info.oneKeyFirst }

// maxNameLen is the longest command or "container|sub" name Lookup accepts; the longest
// in the table is 29 bytes ("cluster|count-failure-reports").
const maxNameLen = 40

// Table is a command table: the generated one (Default), or a copy of it without some
// commands (Without), for tests of what the client does with a command no table has.
// A Table never changes once made.
type Table struct{ m map[string]*Info }

// Default is the generated table; the package's functions use it.
var Default = newTable(commands)

// newTable makes the table of the generated entries m, completing each entry (and
// each subcommand's) with what its key specifications imply (Info.OneKeyFirst): once
// here, at initialisation, rather than on every command.
func newTable(m map[string]*Info) *Table {
	for _, info := range m {
		info.deriveKeys()
		for _, sub := range info.Sub {
			sub.deriveKeys()
		}
	}
	return &Table{m: m}
}

// Without returns a copy of t that lacks the named commands and subcommands (lower
// case, "container|sub" for a subcommand).
func (t *Table) Without(names ...string) *Table {
	m := make(map[string]*Info, len(t.m))
	for k, v := range t.m {
		m[k] = v
	}
	for _, n := range names {
		parent, sub, ok := strings.Cut(n, "|")
		if !ok {
			delete(m, n)
			continue
		}
		if p, ok := m[parent]; ok && p.Sub != nil {
			cp := *p
			cp.Sub = make(map[string]*Info, len(p.Sub))
			for k, v := range p.Sub {
				if k != sub {
					cp.Sub[k] = v
				}
			}
			m[parent] = &cp
		}
	}
	return &Table{m: m}
}

// Lookup returns the entry for a command name, without regard to case. A subcommand can
// be named "container|sub" ("XINFO|STREAM"). It returns nil, false for unknown names.
// Lookup does not allocate.
func Lookup(name string) (*Info, bool) {
	var buf [maxNameLen]byte
	n, ok := lowerInto(&buf, name)
	if !ok {
		return nil, false
	}
	for i := range n {
		if buf[i] == '|' {
			parent, ok := commands[string(buf[:i])]
			if !ok {
				return nil, false
			}
			sub, ok := parent.Sub[string(buf[i+1:n])]
			return sub, ok
		}
	}
	info, ok := commands[string(buf[:n])]
	return info, ok
}

// LookupArgs returns the entry for the command in args, where args[0] is its name (a
// string or []byte). For a container command (CONFIG, OBJECT, XINFO...) it returns the
// subcommand named by args[1] ("XINFO STREAM key" gives xinfo|stream); when args[1] is
// missing or names no subcommand it returns the container itself, whose Sub is non-nil
// and which has no keys. LookupArgs does not allocate.
func LookupArgs(args []any) (*Info, bool) { return Default.LookupArgs(args) }

// LookupArgs is the package's LookupArgs on t.
func (t *Table) LookupArgs(args []any) (*Info, bool) {
	if len(args) == 0 {
		return nil, false
	}
	var buf [maxNameLen]byte
	n, ok := lowerArg(&buf, args[0])
	if !ok {
		return nil, false
	}
	info, ok := t.m[string(buf[:n])]
	if !ok {
		return nil, false
	}
	return SubcommandOf(info, args), true
}

// SubcommandOf returns the entry of the subcommand args[1] names when info, the entry
// of args[0], is a container that has it, and info otherwise. It does not allocate.
func SubcommandOf(info *Info, args []any) *Info {
	if info.Sub != nil && len(args) > 1 {
		var buf [maxNameLen]byte
		if n, ok := lowerArg(&buf, args[1]); ok {
			if sub, ok := info.Sub[string(buf[:n])]; ok {
				return sub
			}
		}
	}
	return info
}

// lowerArg lower-cases an argument of a string or []byte kind into buf.
func lowerArg(buf *[maxNameLen]byte, arg any) (int, bool) {
	if s, ok := argkind.Text(arg); ok {
		return lowerInto(buf, s)
	}
	return 0, false
}

// lowerInto copies s into buf in ASCII lower case. It fails when s does not fit, which
// no command name does.
func lowerInto(buf *[maxNameLen]byte, s string) (int, bool) {
	if len(s) > len(buf) {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		buf[i] = lowerASCII(s[i])
	}
	return len(s), true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}
