package main

import (
	"strings"
	"unicode"
)

// words are the words command and argument names are made of, longest first where
// one begins another, each as a Go name spells it: the names go-redis gave the
// commands (HGetAll, ZRangeByScore, BRPopLPush) come from cutting a command's name
// into these words, greedily from the left, and a letter that begins no word is a word
// of its own (the H of HGETALL, the Z of ZADD).
var words = map[string]string{
	"acl": "ACL", "add": "Add", "addr": "Addr", "after": "After", "aggregate": "Aggregate",
	"all": "All", "alpha": "Alpha", "and": "And", "andor": "AndOr", "any": "Any", "aof": "AOF", "append": "Append",
	"args": "Args", "arg": "Arg", "asc": "Asc", "asking": "Asking", "async": "Async", "at": "At",
	"attr": "Attr", "auth": "Auth", "auto": "Auto", "before": "Before", "bg": "Bg", "bin": "Bin",
	"bit": "Bit", "block": "Block", "by": "By", "bypass": "Bypass", "call": "Call",
	"card": "Card", "cas": "CAS", "cat": "Cat", "caching": "Caching", "ch": "CH", "channel": "Channel", "channels": "Channels",
	"claim": "Claim", "client": "Client", "cluster": "Cluster", "cmd": "Cmd", "command": "Command",
	"config": "Config", "consumer": "Consumer", "consumers": "Consumers", "copy": "Copy",
	"count": "Count", "counts": "Counts", "create": "Create", "db": "DB", "debug": "Debug",
	"decr": "Decr", "del": "Del", "delete": "Delete", "deluser": "DelUser", "desc": "Desc",
	"destroy": "Destroy", "diff": "Diff", "digest": "Digest", "dim": "Dim", "discard": "Discard",
	"dist": "Dist", "doctor": "Doctor", "docs": "Docs", "dryrun": "DryRun", "dump": "Dump",
	"echo": "Echo", "emb": "Emb", "encoding": "Encoding", "entries": "Entries", "eq": "Eq",
	"eval": "Eval", "ex": "Ex", "exat": "ExAt", "exec": "Exec", "exists": "Exists",
	"expire": "Expire", "expiretime": "ExpireTime", "failover": "Failover", "fields": "Fields",
	"field": "Field", "flush": "Flush", "float": "Float", "force": "Force", "freq": "Freq",
	"full": "Full", "function": "Function", "gen": "Gen", "genpass": "GenPass", "geo": "Geo",
	"get": "Get", "getkeys": "GetKeys", "getkeysandflags": "GetKeysAndFlags", "getuser": "GetUser",
	"graph": "Graph", "group": "Group", "groups": "Groups", "gt": "GT", "hash": "Hash",
	"hello": "Hello", "help": "Help", "histogram": "Histogram", "history": "History",
	"id": "ID", "idle": "Idle", "if": "If", "incr": "Incr", "index": "Index", "info": "Info",
	"insert": "Insert", "inter": "Inter", "is": "Is", "json": "JSON", "keep": "Keep",
	"key": "Key", "keys": "Keys", "kill": "Kill", "last": "Last", "latency": "Latency",
	"lcs": "LCS", "left": "Left", "len": "Len", "lex": "Lex", "limit": "Limit", "links": "Links",
	"list": "List", "load": "Load", "log": "Log", "lt": "LT", "malloc": "Malloc", "match": "Match",
	"max": "Max", "member": "Member", "members": "Members", "memory": "Memory", "merge": "Merge",
	"migrate": "Migrate", "min": "Min", "module": "Module", "monitor": "Monitor", "move": "Move",
	"multi": "Multi", "my": "My", "name": "Name", "ne": "Ne", "no": "No", "node": "Node",
	"nodes": "Nodes", "not": "Not", "num": "Num", "numpat": "NumPat", "numsub": "NumSub",
	"nx": "NX", "object": "Object", "only": "Only", "op": "Op", "or": "Or", "pat": "Pat",
	"pause": "Pause", "pending": "Pending", "persist": "Persist", "pf": "PF", "ping": "Ping",
	"pop": "Pop", "pos": "Pos", "publish": "Publish", "pubsub": "PubSub", "punsubscribe": "PUnsubscribe",
	"push": "Push", "pxat": "PxAt", "quit": "Quit", "radius": "Radius", "rand": "Rand",
	"random": "Random", "range": "Range", "read": "Read", "readonly": "ReadOnly", "readwrite": "ReadWrite",
	"redirect": "Redirect", "ref": "Ref", "refcount": "RefCount", "rem": "Rem", "rename": "Rename",
	"replica": "Replica", "replicas": "Replicas", "replicate": "Replicate", "replicaof": "ReplicaOf",
	"reset": "Reset", "restore": "Restore", "rev": "Rev", "rewrite": "Rewrite", "ro": "RO",
	"role": "Role", "save": "Save", "scan": "Scan", "score": "Score", "scores": "Scores",
	"script": "Script", "search": "Search", "select": "Select", "sentinel": "Sentinel",
	"set": "Set", "setuser": "SetUser", "sha": "Sha", "shard": "Shard", "shards": "Shards",
	"shutdown": "Shutdown", "sim": "Sim", "size": "Size", "slave": "Slave", "slaves": "Slaves",
	"slot": "Slot", "slots": "Slots", "slowlog": "SlowLog", "sort": "Sort", "stats": "Stats",
	"store": "Store", "str": "Str", "stream": "Stream", "sub": "Sub", "subscribe": "Subscribe",
	"swap": "Swap", "sync": "Sync", "time": "Time", "touch": "Touch", "tracking": "Tracking",
	"trim": "Trim", "ttl": "TTL", "type": "Type", "unblock": "Unblock", "union": "Union",
	"unlink": "Unlink", "unpause": "Unpause", "unsubscribe": "Unsubscribe", "unwatch": "Unwatch",
	"usage": "Usage", "user": "User", "users": "Users", "vals": "Vals", "version": "Version",
	"wait": "Wait", "watch": "Watch", "who": "Who", "am": "Am", "whoami": "WhoAmI", "with": "With",
	"withscores": "WithScores", "withscore": "WithScore", "xor": "XOr", "yes": "Yes", "lpush": "LPush",
	"msg": "Msg", "metrics": "Metrics", "lolwut": "Lolwut", "psync": "PSync", "setrange": "SetRange",
	"getrange": "GetRange", "substr": "SubStr", "stralgo": "StrAlgo", "algo": "Algo",
	"stat": "Stat", "epoch": "Epoch", "bump": "Bump", "failure": "Failure", "reports": "Reports", "forget": "Forget", "meet": "Meet",
	"cached": "Cached", "evict": "Evict", "setinfo": "SetInfo", "getname": "GetName",
	"setname": "SetName", "getredir": "GetRedir", "trackinginfo": "TrackingInfo", "reply": "Reply",
	"deny": "Deny", "lib": "Lib", "restart": "Restart", "stop": "Stop", "purge": "Purge",
	"doc": "Doc", "latest": "Latest", "page": "Page", "view": "View", "flags": "Flags",
	"attach": "Attach", "manual": "Manual", "obj": "Obj", "sdslen": "SDSLen",
	"change": "Change", "repl": "Repl", "listpack": "Listpack", "quicklist": "Quicklist",
	"packed": "Packed", "populate": "Populate", "protocol": "Protocol", "reload": "Reload",
	"addslots": "AddSlots", "addslotsrange": "AddSlotsRange", "countkeysinslot": "CountKeysInSlot",
	"delslots": "DelSlots", "delslotsrange": "DelSlotsRange", "getkeysinslot": "GetKeysInSlot",
	"keyslot": "KeySlot", "myid": "MyID", "myshardid": "MyShardID", "setslot": "SetSlot",
	"countfailurereports": "CountFailureReports", "flushslots": "FlushSlots", "bumpepoch": "BumpEpoch",
	"setconfigepoch": "SetConfigEpoch", "saveconfig": "SaveConfig", "syncslots": "SyncSlots",
	"slotstats": "SlotStats", "cancel": "Cancel", "tx": "Tx",
	"noevict": "NoEvict", "notouch": "NoTouch", "noloop": "NoLoop",
	"numkeys": "NumKeys", "numfields": "NumFields", "fp32": "FP32", "q8": "Q8", "noquant": "NoQuant",
	"ef": "EF", "raw": "Raw", "getattr": "GetAttr", "setattr": "SetAttr", "ismember": "IsMember",
	"randmember": "RandMember", "fcall": "FCall", "ifeq": "IfEq", "ifne": "IfNe", "ifdeq": "IfDEq",
	"ifdne": "IfDNe", "delex": "DelEx", "delifeq": "DelIfEq", "keepttl": "KeepTTL", "px": "PX", "bylex": "ByLex", "byscore": "ByScore", "byradius": "ByRadius", "bybox": "ByBox", "libraryname": "LibraryName", "withcode": "WithCode", "idmpauto": "IDMPAuto", "bypolygon": "ByPolygon",
	"frommember": "FromMember", "fromlonlat": "FromLonLat", "withcoord": "WithCoord",
	"withdist": "WithDist", "withhash": "WithHash", "storedist": "StoreDist", "justid": "JustID",
	"mkstream": "MkStream", "entriesread": "EntriesRead", "maxlen": "MaxLen", "minid": "MinID",
	"nomkstream": "NoMkStream", "setid": "SetID", "createconsumer": "CreateConsumer",
	"delconsumer": "DelConsumer", "lastid": "LastID", "maxdeletedid": "MaxDeletedID",
	"retrycount": "RetryCount", "withvalues": "WithValues", "withmatchlen": "WithMatchLen",
	"minmatchlen": "MinMatchLen", "idx": "Idx", "kv": "KV", "nosave": "NoSave", "abort": "Abort",
	"schedule": "Schedule", "now": "Now", "backlog": "Backlog",
	"migration": "Migration", "migrations": "Migrations", "capa": "CAPA", "import": "Import",
	"source": "Source", "show": "Show", "ckquorum": "CKQuorum", "master": "Master", "masters": "Masters",
	"primary": "Primary", "primaries": "Primaries", "down": "Down", "cache": "Cache", "remove": "Remove",
	"sentinels": "Sentinels", "scripts": "Scripts", "simulate": "Simulate", "hotkeys": "HotKeys",
	"start": "Start", "unload": "Unload", "idmp": "IDMP", "record": "Record", "ltrim": "LTrim",
	"of": "Of", "rank": "Rank", "ack": "Ack", "noack": "NoAck", "maxage": "MaxAge", "cfg": "Cfg", "self": "Self", "test": "Test", "conf": "Conf",
}

// initialisms are argument words spelt in capitals in Go names.
var initialisms = map[string]bool{"id": true, "ttl": true, "nx": true, "xx": true, "gt": true, "lt": true,
	"ch": true, "db": true, "ro": true, "ip": true, "aof": true, "acl": true, "lcs": true, "url": true,
	"ex": true, "px": true, "ef": true, "kv": true, "fnx": true, "fxx": true}

// goName returns a Go name for a command name ("hgetall", "client|list",
// "georadius_ro"): HGetAll, ClientList, GeoRadiusRO.
func goName(name string) string {
	var b strings.Builder
	for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '|' || r == '_' || r == '-' || r == '.' }) {
		b.WriteString(cutWords(part))
	}
	return b.String()
}

// cutWords spells one run of letters as Go words, greedily from the left.
func cutWords(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for len(s) > 0 {
		best := ""
		for w := range words {
			if len(w) > len(best) && strings.HasPrefix(s, w) {
				best = w
			}
		}
		if best == "" {
			r := []rune(s)[0]
			b.WriteRune(unicode.ToUpper(r))
			s = s[len(string(r)):]
			continue
		}
		b.WriteString(words[best])
		s = s[len(best):]
	}
	return b.String()
}

// argName returns a Go name for an argument ("unix-time-seconds", "withscores"):
// UnixTimeSeconds, WithScores. Words of an argument are separated in the spec, so only
// a whole word is looked up, and an unknown word is capitalised.
func argName(name string) string {
	var b strings.Builder
	for _, w := range strings.FieldsFunc(name, func(r rune) bool { return r == '-' || r == '_' || r == ' ' || r == '|' || r == '.' }) {
		lw := strings.ToLower(w)
		switch {
		case initialisms[lw]:
			b.WriteString(strings.ToUpper(lw))
		case words[lw] != "":
			b.WriteString(words[lw])
		default:
			if lw == "" {
				continue
			}
			if !unicode.IsLetter(rune(lw[0])) {
				b.WriteString("N")
			}
			b.WriteString(strings.ToUpper(lw[:1]) + lw[1:])
		}
	}
	return b.String()
}

// lowerFirst is a Go name made unexported: its first word in lower case.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	i := 0
	for i < len(r) && unicode.IsUpper(r[i]) {
		i++
	}
	switch {
	case i == len(r), i == len(r)-1 && r[i] == 's':
		i = len(r) // "ID" → "id", "IDs" → "ids"
	case i > 1:
		i-- // "IDList" → "idList"
	}
	for j := 0; j < i || j == 0; j++ {
		r[j] = unicode.ToLower(r[j])
	}
	out := string(r)
	if alt, ok := keywordAlternatives[out]; ok {
		return alt
	}
	if goKeywords[out] {
		out += "_"
	}
	return out
}

// keywordAlternatives are readable names for parameters and fields whose own name is
// a keyword or a name the generated code uses (RESTORE's ttl, COMMANDLOG's type).
var keywordAlternatives = map[string]string{
	"type": "typ", "ttl": "keyTTL", "len": "length", "copy": "copyKey", "range": "rangeOpt",
	"min": "minimum", "max": "maximum", "new": "newValue", "time": "at", "string": "str",
}

var goKeywords = map[string]bool{
	"break": true, "case": true, "chan": true, "const": true, "continue": true, "default": true,
	"defer": true, "else": true, "fallthrough": true, "for": true, "func": true, "go": true, "goto": true,
	"if": true, "import": true, "interface": true, "map": true, "package": true, "range": true,
	"return": true, "select": true, "struct": true, "switch": true, "type": true, "var": true,
	"string": true, "len": true, "any": true, "v": true, "c": true, "ctx": true, "r": true, "p": true,
	"ttl": true, "err": true, "time": true, "copy": true, "min": true, "max": true, "new": true,
}
