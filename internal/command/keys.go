package command

import (
	"slices"

	"github.com/respire/respire/internal/argkind"
)

// KeyIndexes appends to dst the positions in args of every key argument of the command,
// in increasing order and without duplicates, and returns the extended slice. args[0]
// is the command name (string or []byte); the other arguments may be strings, []byte,
// integers or floats. Unknown commands, container commands without a known subcommand
// and commands without keys append nothing.
//
// Shard channels (SPUBLISH, SSUBSCRIBE, SUNSUBSCRIBE) are included: they hash to a
// Cluster slot like keys. Use PrefixableKeyIndexes for the arguments a key prefix
// applies to.
//
// KeyIndexes does not allocate when dst has room for the keys.
func KeyIndexes(args []any, dst []int) []int {
	return keyIndexes(args, dst, true)
}

// PrefixableKeyIndexes is KeyIndexes without the arguments Redis flags not_key (the
// shard channels of SPUBLISH, SSUBSCRIBE and SUNSUBSCRIBE): the positions of the keys in
// the keyspace, which Options.KeyPrefix rewrites. On well-formed commands it agrees
// with the server's COMMAND GETKEYS, except where GETKEYS disagrees with what the
// command does (see the package documentation).
func PrefixableKeyIndexes(args []any, dst []int) []int {
	return keyIndexes(args, dst, false)
}

// InfoKeyIndexes is KeyIndexes for a caller that already looked the command up:
// info must be what LookupArgs returned for args (or an entry learned from the server,
// FromSpec).
func InfoKeyIndexes(info *Info, args []any, dst []int) []int {
	return infoKeyIndexes(info, args, dst, true)
}

// InfoPrefixableKeyIndexes is PrefixableKeyIndexes for a caller that already looked the
// command up, as InfoKeyIndexes is.
func InfoPrefixableKeyIndexes(info *Info, args []any, dst []int) []int {
	return infoKeyIndexes(info, args, dst, false)
}

// KeysKnown reports whether KeyIndexes finds every key of the command. It is false for
// a command whose keys move with its arguments in a way its key specifications do not
// describe (none, unknown or incomplete ones) and that has no hand rule: the generated
// table has none such (TestHandFinders), but an entry learned from a server (a module's
// command) can be one.
func (info *Info) KeysKnown() bool {
	if _, hand := appendHandKeys(info, nil, nil); hand {
		return true
	}
	if info.Flags&FlagMovableKeys != 0 && len(info.KeySpecs) == 0 {
		return false
	}
	for _, ks := range info.KeySpecs {
		if ks.Begin.Kind == BeginUnknown || ks.Find.Kind == FindUnknown || ks.Flags&KeySpecIncomplete != 0 {
			return false
		}
	}
	return true
}

// deriveKeys fills in the fields of info its key specifications imply. An entry has
// one key, its first argument, when its single specification begins at index 1 and
// spans one argument: a range of last key 0 (whatever its step, which one key does not
// use). A command whose keys move with its arguments is left out, as its keys may come
// from a hand rule (appendHandKeys) instead; so are an incomplete specification,
// which may not name every key, and a not_key one (a shard channel), which
// PrefixableKeyIndexes leaves out.
func (info *Info) deriveKeys() {
	info.oneKeyFirst = false
	if len(info.KeySpecs) != 1 || info.Flags&FlagMovableKeys != 0 {
		return
	}
	ks := &info.KeySpecs[0]
	info.oneKeyFirst = ks.Begin.Kind == BeginIndex && ks.Begin.Pos == 1 &&
		ks.Find.Kind == FindRange && ks.Find.LastKey == 0 && ks.Find.KeyStep >= 1 &&
		ks.Flags&(KeySpecIncomplete|KeySpecNotKey) == 0
}

func keyIndexes(args []any, dst []int, withNotKeys bool) []int {
	info, ok := LookupArgs(args)
	if !ok {
		return dst
	}
	return infoKeyIndexes(info, args, dst, withNotKeys)
}

func infoKeyIndexes(info *Info, args []any, dst []int, withNotKeys bool) []int {
	if info.oneKeyFirst {
		if len(args) < 2 {
			return dst // refused by the server; the specification finds no key either
		}
		return append(dst, 1)
	}
	start := len(dst)
	if d, ok := appendHandKeys(info, args, dst); ok {
		dst = d
	} else {
		for i := range info.KeySpecs {
			ks := &info.KeySpecs[i]
			if ks.Flags&KeySpecNotKey != 0 && !withNotKeys {
				continue
			}
			dst, _ = ks.appendKeys(args, dst)
		}
	}
	// Specs are evaluated one after another, so keys of a later spec may come before
	// those of an earlier one (or repeat them); callers want each position once, in
	// order. This is usually already true and costs one pass.
	keys := dst[start:]
	if !slices.IsSorted(keys) {
		slices.Sort(keys)
	}
	return dst[:start+len(slices.Compact(keys))]
}

// appendKeys appends the positions this key specification selects in args, following
// getKeysUsingKeySpecs in the server's db.c. A specification that cannot be evaluated,
// or whose positions fall outside args (a malformed command), appends nothing and
// reports false: the server calls such a spec invalid and runs the command's own
// key-finding code instead, which for malformed commands we do not imitate. A keyword
// that is absent is not invalid; that spec just has no keys.
func (ks *KeySpec) appendKeys(args []any, dst []int) ([]int, bool) {
	argc := len(args)
	var first int
	switch ks.Begin.Kind {
	case BeginIndex:
		first = ks.Begin.Pos
	case BeginKeyword:
		if first = ks.Begin.keywordEnd(args); first == 0 {
			return dst, true
		}
	}
	if first <= 0 || first >= argc {
		return dst, false
	}

	var last, step int
	switch ks.Find.Kind {
	case FindRange:
		step = ks.Find.KeyStep
		switch {
		case ks.Find.LastKey >= 0:
			last = first + ks.Find.LastKey
		case ks.Find.Limit == 0:
			last = argc + ks.Find.LastKey
		default:
			// The keys are the first (argc-first)/Limit arguments after the beginning.
			last = first + (argc-first)/ks.Find.Limit + ks.Find.LastKey
		}
	case FindKeynum:
		step = ks.Find.KeyStep
		at := first + ks.Find.KeyNumIdx
		if at < 1 || at >= argc {
			return dst, false
		}
		n, ok := argInt(args[at])
		if !ok || n < 0 || n > int64(argc) {
			return dst, false
		}
		first += ks.Find.FirstKey
		// n counts keys, step apart: MSETEX numkeys k v k v has KeyStep 2. (Redis 7.0's
		// evaluator computes first+n-1, the same for its commands, all of step 1.)
		last = first + (int(n)-1)*step
	default:
		return dst, false
	}
	if step < 1 || first >= argc || last >= argc || last < first {
		return dst, false
	}
	for i := first; i <= last; i += step {
		dst = append(dst, i)
	}
	return dst, ks.Flags&KeySpecIncomplete == 0
}

// keywordEnd returns the index just after the keyword, or 0 when it is not found. A
// positive StartFrom searches forwards from there up to the second-to-last argument (a
// keyword in last place has no keys after it); a negative one searches backwards from
// len(args)+StartFrom down to index 2. These are the server's bounds.
func (b *BeginSearch) keywordEnd(args []any) int {
	argc := len(args)
	if b.StartFrom > 0 {
		for i := b.StartFrom; i < argc-1; i++ {
			if argIsKeyword(args[i], b.Keyword) {
				return i + 1
			}
		}
		return 0
	}
	for i := argc + b.StartFrom; i > 1; i-- {
		if i < argc && argIsKeyword(args[i], b.Keyword) {
			return i + 1
		}
	}
	return 0
}

// appendHandKeys appends the key positions of the commands whose key specifications do
// not describe what the command does, and reports whether info is one of them:
//   - SORT, SORT_RO and MIGRATE, whose Redis 7.0 specs are "unknown" or "incomplete"
//     (the server itself runs code for them);
//   - STRALGO (Redis 6 only), which has no key specs at all;
//   - XREAD and XREADGROUP, whose STREAMS keyword search can stop at a group or
//     consumer named "streams" (see xreadKeys).
//
// TestHandFinders checks that every unknown or incomplete spec in the table is handled
// here. (A switch of direct calls rather than a table of funcs keeps args from
// escaping.)
func appendHandKeys(info *Info, args []any, dst []int) ([]int, bool) {
	if info.Flags&FlagMovableKeys == 0 {
		return dst, false
	}
	switch info.Name {
	case "sort":
		return sortKeys(args, dst), true
	case "sort_ro":
		return sortROKeys(args, dst), true
	case "migrate":
		return migrateKeys(args, dst), true
	case "xread":
		return xreadKeys(args, dst, false), true
	case "xreadgroup":
		return xreadKeys(args, dst, true), true
	case "stralgo":
		return stralgoKeys(args, dst), true
	}
	return dst, false
}

// stralgoKeys: STRALGO LCS [KEYS k1 k2 | STRINGS a b] [LEN] [IDX] ..., Redis 6.0 and
// 6.2 (7.0 replaced it with LCS). The options are walked as its lcsGetKeys walks them:
// a KEYS with two arguments after it names the keys, unless STRINGS came first.
func stralgoKeys(args []any, dst []int) []int {
	for i := 1; i < len(args); i++ {
		switch {
		case argIsKeyword(args[i], "STRINGS"):
			return dst
		case argIsKeyword(args[i], "KEYS") && len(args)-1-i >= 2:
			return append(dst, i+1, i+2)
		}
	}
	return dst
}

// sortROKeys: SORT_RO key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA]. Only the sort key is a key argument; BY and GET name keys through patterns
// applied to data, which no client can know in advance.
func sortROKeys(args []any, dst []int) []int {
	if len(args) > 1 {
		dst = append(dst, 1)
	}
	return dst
}

// sortKeys: SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
// [ALPHA] [STORE destination]. The options are walked as sortCommand walks them when it
// runs (sortOptions), so a pattern or LIMIT value spelled "store" is not mistaken for
// the option, and with several STOREs the last one wins.
//
// This follows execution rather than the server's COMMAND GETKEYS, which differ when a
// STORE destination is itself spelled like an option: for SORT k STORE get STORE d2
// the server stores into d2 but its sortGetKeys, which does not skip the destination,
// reports "get". A key prefix must follow where the data goes.
func sortKeys(args []any, dst []int) []int {
	if len(args) < 2 {
		return dst
	}
	return sortOptions(append(dst, 1), args, false)
}

// sortOptions walks the options of SORT or SORT_RO from index 2 as sortCommandGeneric
// does, and appends to dst the STORE destination (the last one), or with patterns the
// BY and GET patterns that name keys (patternNamesKeys) instead.
func sortOptions(dst []int, args []any, patterns bool) []int {
	store := 0
	for i := 2; i < len(args); i++ {
		left := len(args) - i - 1
		a := args[i]
		switch {
		case argIsKeyword(a, "LIMIT") && left >= 2:
			i += 2
		case (argIsKeyword(a, "BY") || argIsKeyword(a, "GET")) && left >= 1:
			if patterns && patternNamesKeys(args[i+1]) {
				dst = append(dst, i+1)
			}
			i++
		case argIsKeyword(a, "STORE") && left >= 1:
			store = i + 1
			i++
		}
		// ASC, DESC, ALPHA take no value; anything else is a syntax error for the
		// server, and skipping one argument is what sortGetKeys does with it.
	}
	if !patterns && store > 1 {
		dst = append(dst, store)
	}
	return dst
}

// migrateKeys: MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key ...]. The server first evaluates
// the key specs: the key at position 3, and a backwards search for KEYS from the
// second-to-last argument. Only when that search finds a KEYS (the incomplete spec)
// does it parse the options instead (migrateGetKeys): AUTH and AUTH2 values are skipped
// so a password spelled "keys" is not taken for the option, and a real KEYS option
// (which needs an empty key at 3) makes every argument after it a key.
func migrateKeys(args []any, dst []int) []int {
	if len(args) < 4 {
		return dst
	}
	found := false
	for i := len(args) - 2; i > 1; i-- {
		if argIsKeyword(args[i], "KEYS") {
			found = true
			break
		}
	}
	if !found {
		return append(dst, 3)
	}
	for i := 6; i < len(args); i++ {
		a := args[i]
		switch {
		case argIsKeyword(a, "KEYS"):
			if !argIsEmpty(args[3]) {
				return dst // the server refuses KEYS with a non-empty key
			}
			for k := i + 1; k < len(args); k++ {
				dst = append(dst, k)
			}
			return dst
		case argIsKeyword(a, "AUTH"):
			i++
		case argIsKeyword(a, "AUTH2"):
			i += 2
		}
	}
	return append(dst, 3)
}

// xreadKeys: XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ... and XREADGROUP GROUP g c
// [COUNT n] [BLOCK ms] [NOACK] STREAMS key ... id ...: the first half of the arguments
// after the STREAMS option, found by walking the options as xreadCommand does.
//
// The key spec (keyword STREAMS, searched from index 1 for XREAD and 4 for XREADGROUP)
// gives the same answer for every ordinary command, but its search stops at the first
// argument spelled "streams" from there on, which may be a group or consumer name when
// options come first: for XREADGROUP COUNT 1 GROUP streams c STREAMS k > the server
// reads stream k, yet the spec (and the server's COMMAND GETKEYS) names "c" and
// "STREAMS". Prefixing those would break the command, so this follows execution.
func xreadKeys(args []any, dst []int, group bool) []int {
	streams, _ := xreadOptions(args, group)
	if streams == 0 {
		return dst
	}
	rest := len(args) - streams - 1
	if rest%2 != 0 {
		return dst // the server replies "Unbalanced ... list of streams"
	}
	for i := streams + 1; i <= streams+rest/2; i++ {
		dst = append(dst, i)
	}
	return dst
}

// argIsEmpty reports whether arg is the empty string.
func argIsEmpty(arg any) bool {
	s, ok := argkind.Text(arg)
	return ok && s == ""
}
