package main

import (
	"strings"

	"github.com/respire/respire/internal/cmdspec"
)

// reply is the Go type of a command's reply and the function of package cmds that
// decodes it.
type reply struct {
	goType, decode string
}

var (
	replyValue       = reply{"resp.Value", "decodeValue"}
	replyString      = reply{"string", "decodeString"}
	replyInt         = reply{"int64", "decodeInt"}
	replyFloat       = reply{"float64", "decodeFloat"}
	replyBool        = reply{"bool", "decodeBool"}
	replyStrings     = reply{"[]string", "decodeStrings"}
	replyInts        = reply{"[]int64", "decodeInts"}
	replyBools       = reply{"[]bool", "decodeBools"}
	replyNullStrings = reply{"[]Null[string]", "decodeNullStrings"}
	replyNullFloats  = reply{"[]Null[float64]", "decodeNullFloats"}
	replyStringMap   = reply{"map[string]string", "decodeStringMap"}
	replyZ           = reply{"[]Z", "decodeZ"}
	replyScan        = reply{"ScanPage", "decodeScan"}
	replyXMessages   = reply{"[]XMessage", "decodeXMessages"}
	replyXStreams    = reply{"[]XStream", "decodeXStreams"}
	replyGeoPos      = reply{"[]Null[GeoPosition]", "decodeGeoPositions"}
	replyGeoResults  = reply{"[]GeoResult", "decodeGeoResults"}
	replyClients     = reply{"[]ConnectedClient", "decodeClientList"}
	replyClient      = reply{"ConnectedClient", "decodeClientInfo"}
	replyFunctions   = reply{"[]FunctionLibrary", "decodeFunctionList"}
	replyZWithKey    = reply{"ZWithKey", "decodeZWithKey"}
	replyKeyValues   = reply{"KeyValues", "decodeKeyValues"}
	replyKeyZs       = reply{"KeyZs", "decodeKeyZs"}
	replyIntMap      = reply{"map[string]int64", "decodeIntMap"}
	replyXGroups     = reply{"[]XGroupInfo", "decodeXInfoGroups"}
	replyXConsumers  = reply{"[]XConsumerInfo", "decodeXInfoConsumers"}
	replyXStreamInfo = reply{"XStreamInfo", "decodeXInfoStream"}
	replyFieldValues = reply{"[]FieldValue", "decodeFieldValues"}
	replyXPending    = reply{"XPendingSummary", "decodeXPendingSummary"}
	replyXPendingExt = reply{"[]XPendingEntry", "decodeXPendingEntries"}
	replyXAutoClaim  = reply{"XAutoClaimResult", "decodeXAutoClaim"}
	replyXAutoIDs    = reply{"XAutoClaimIDs", "decodeXAutoClaimIDs"}
	replyNullInts    = reply{"[]Null[int64]", "decodeNullInts"}
	replySlowLog     = reply{"[]SlowLogEntry", "decodeSlowLog"}
	replyStringMaps  = reply{"[]map[string]string", "decodeStringMaps"}
	replyFloats      = reply{"[]float64", "decodeFloats"}
	replyRankScore   = reply{"RankScore", "decodeRankScore"}
	replyLCSMatches  = reply{"LCSMatches", "decodeLCSMatches"}
	replyVectorRaw   = reply{"VectorRaw", "decodeVectorRaw"}
	replyVInfo       = reply{"VectorSetInfo", "decodeVectorSetInfo"}
	replyLevels      = reply{"[][]string", "decodeLevels"}
	replyZLevels     = reply{"[][]Z", "decodeZLevels"}
	replyCommandLog  = reply{"[]CommandLogEntry", "decodeCommandLog"}
)

// variant is one typed form of a command. A command whose reply changes shape with an
// option (ZRANGE ... WITHSCORES) has a form without the option and one per option, so
// each has one reply type.
type variant struct {
	suffix  string          // added to the constructor's name: ZRange + WithScores
	token   string          // a keyword the form always sends
	require string          // an optional argument (by name) the form requires
	drop    map[string]bool // optional arguments (by keyword or name) the form leaves out
	reply   *reply          // the form's reply, when the schema does not give it alone
	single  bool            // the form's list of elements takes exactly one (ZADD INCR)
}

// variants are the commands whose reply depends on an option, and their forms beyond
// the first.
var variants = map[string][]variant{
	"zrange":           {withScores},
	"zrangebyscore":    {withScores},
	"zrevrange":        {withScores},
	"zrevrangebyscore": {withScores},
	"zunion":           {withScores},
	"zinter":           {withScores},
	"zdiff":            {withScores},
	"zadd":             {{suffix: "Incr", token: "INCR", reply: &replyFloat, single: true}},
	"zrank":            {{suffix: "WithScore", token: "WITHSCORE", reply: &replyRankScore}},
	"zrevrank":         {{suffix: "WithScore", token: "WITHSCORE", reply: &replyRankScore}},
	"lpop":             {counted(replyStrings)},
	"hrandfield": {
		{suffix: "Count", require: "options", drop: map[string]bool{"WITHVALUES": true}, reply: &replyStrings},
		{suffix: "WithValues", require: "options", token: "WITHVALUES", reply: &replyFieldValues},
	},
	"zrandmember": {
		{suffix: "Count", require: "options", drop: map[string]bool{"WITHSCORES": true}, reply: &replyStrings},
		{suffix: "WithScores", require: "options", token: "WITHSCORES", reply: &replyZ},
	},
	"xpending":   {{suffix: "Ext", require: "filters", reply: &replyXPendingExt}},
	"sort":       {{suffix: "Store", require: "destination", reply: &replyInt}},
	"xclaim":     {{suffix: "JustID", token: "JUSTID", reply: &replyStrings}},
	"xautoclaim": {{suffix: "JustID", token: "JUSTID", reply: &replyXAutoIDs}},
	"lcs": {
		{suffix: "Len", token: "LEN", drop: map[string]bool{"IDX": true, "MINMATCHLEN": true, "WITHMATCHLEN": true}, reply: &replyInt},
		{suffix: "Idx", token: "IDX", drop: map[string]bool{"LEN": true}, reply: &replyLCSMatches},
	},
	"vemb":        {{suffix: "Raw", token: "RAW", reply: &replyVectorRaw}},
	"vrandmember": {counted(replyStrings)},
	"vlinks":      {{suffix: "WithScores", token: "WITHSCORES", reply: &replyZLevels}},
	"vsim":        {{suffix: "WithScores", token: "WITHSCORES", drop: map[string]bool{"withattribs": true}, reply: &replyZ}},
	"lpos":        {{suffix: "Count", require: "num-matches", reply: &replyInts}},
	"rpop":        {counted(replyStrings)},
	"spop":        {counted(replyStrings)},
	"srandmember": {counted(replyStrings)},
}

var withScores = variant{suffix: "WithScores", token: "WITHSCORES", reply: &replyZ}

func counted(r reply) variant { return variant{suffix: "Count", require: "count", reply: &r} }

// overrides are the replies the schemas do not give in a form a Go caller wants: a
// number the server sends as a string, a cursor and its page, the forms without
// their option.
var overrides = map[string]reply{
	"incrbyfloat":      replyFloat,
	"hincrbyfloat":     replyFloat,
	"geodist":          replyFloat,
	"zadd":             replyInt,
	"zpopmin":          replyZ,
	"zpopmax":          replyZ,
	"scan":             replyScan,
	"sscan":            replyScan,
	"hscan":            replyScan,
	"zscan":            replyScan,
	"zrange":           replyStrings,
	"zrangebyscore":    replyStrings,
	"zrevrange":        replyStrings,
	"zrevrangebyscore": replyStrings,
	"zunion":           replyStrings,
	"zinter":           replyStrings,
	"zdiff":            replyStrings,
	"zrank":            replyInt,
	"zrevrank":         replyInt,
	"xrange":           replyXMessages,
	"xrevrange":        replyXMessages,
	"xread":            replyXStreams,
	"xreadgroup":       replyXStreams,
	"geopos":           replyGeoPos,
	// Its schema says strings, but a member that is not in the set is a null.
	"geohash":              replyNullStrings,
	"geosearch":            replyGeoResults,
	"georadius_ro":         replyGeoResults,
	"georadiusbymember_ro": replyGeoResults,
	"client|list":          replyClients,
	"client|info":          replyClient,
	"function|list":        replyFunctions,
	// The vector-set module's specification has no reply schemas.
	"vcard":       replyInt,
	"vdim":        replyInt,
	"vadd":        replyBool,
	"vrem":        replyBool,
	"vismember":   replyBool,
	"vsetattr":    replyBool,
	"vgetattr":    replyString,
	"vemb":        replyFloats,
	"vinfo":       replyVInfo,
	"vlinks":      replyLevels,
	"vrandmember": replyString,
	"vrange":      replyStrings,
	"vsim":        replyStrings,
	// Its schema gives the count of replicas as a number, not an integer.
	"waitaof": replyInts,
	// Its schema lists WRONGTYPE, an error reply, beside the 0 and 1 it answers.
	"delex":              replyBool,
	"bzpopmin":           replyZWithKey,
	"bzpopmax":           replyZWithKey,
	"lmpop":              replyKeyValues,
	"blmpop":             replyKeyValues,
	"zmpop":              replyKeyZs,
	"bzmpop":             replyKeyZs,
	"lpos":               replyInt,
	"pubsub|numsub":      replyIntMap,
	"pubsub|shardnumsub": replyIntMap,
	"xinfo|groups":       replyXGroups,
	"xinfo|consumers":    replyXConsumers,
	"xinfo|stream":       replyXStreamInfo,
	"hrandfield":         replyString,
	"zrandmember":        replyString,
	"xpending":           replyXPending,
	"sort":               replyNullStrings,
	"xclaim":             replyXMessages,
	"xautoclaim":         replyXAutoClaim,
	"bitfield":           replyNullInts,
	"bitfield_ro":        replyInts,
	"slowlog|get":        replySlowLog,
	"commandlog|get":     replyCommandLog,
	"lcs":                replyString,
	"sentinel|masters":   replyStringMaps,
	"sentinel|primaries": replyStringMaps,
	"sentinel|replicas":  replyStringMaps,
	"sentinel|slaves":    replyStringMaps,
	"sentinel|sentinels": replyStringMaps,
	"lpop":               replyString,
	"rpop":               replyString,
	"spop":               replyString,
	"srandmember":        replyString,
}

// plainDrops are the optional arguments (by name) that change a reply's shape and
// have no typed form of their own yet: the plain form leaves them out, and
// Client.Do sends them (XINFO STREAM FULL).
var plainDrops = map[string][]string{
	"xinfo|stream": {"full-block"},
	"lcs":          {"min-match-len", "withmatchlen"}, // IDX's options, in LCSIdx
	"vsim":         {"withattribs"},
}

// variantsOf returns a command's forms: the plain one first.
func variantsOf(c *cmdspec.Command) []variant {
	vs := variants[c.Name]
	plain := variant{drop: map[string]bool{}}
	for _, name := range plainDrops[c.Name] {
		plain.drop[name] = true
	}
	for _, v := range vs {
		if v.token != "" {
			plain.drop[v.token] = true
		}
		if v.require != "" {
			plain.drop[v.require] = true
		}
	}
	return append([]variant{plain}, vs...)
}

// replyOf returns the reply type of a command's form.
func replyOf(c *cmdspec.Command, v variant) reply {
	if v.reply != nil {
		return *v.reply
	}
	if r, ok := overrides[c.Name]; ok {
		return r
	}
	if c.Reply == nil {
		return replyValue
	}
	r, _ := schemaReply(c.Reply)
	return r
}

// schemaReply infers a reply from a schema; nullable reports a schema that allows
// null besides the reply (told by Nil).
func schemaReply(s *cmdspec.Schema) (r reply, nullable bool) {
	alts := append(append([]*cmdspec.Schema(nil), s.OneOf...), s.AnyOf...)
	if len(alts) > 0 {
		var kinds []reply
		for _, a := range alts {
			if isNull(a) {
				nullable = true
				continue
			}
			k, _ := schemaReply(a)
			kinds = append(kinds, k)
		}
		if allBoolConsts(alts) {
			return replyBool, false
		}
		for _, k := range kinds[1:] {
			if k != kinds[0] {
				return replyValue, nullable
			}
		}
		if len(kinds) == 0 {
			return replyValue, nullable
		}
		return kinds[0], nullable
	}
	if s.Const != nil {
		switch s.Const.(type) {
		case string:
			return replyString, false
		case float64:
			return replyInt, false
		}
		return replyValue, false
	}
	switch types := s.Types(); {
	case len(types) != 1:
		return replyValue, false
	case types[0] == "string":
		return replyString, false
	case types[0] == "integer":
		return replyInt, false
	case types[0] == "number":
		return replyFloat, false
	case types[0] == "boolean":
		return replyBool, false
	case types[0] == "object":
		if add := s.Additional(); add != nil && len(s.Properties) == 0 {
			if r, _ := schemaReply(add); r == replyString {
				return replyStringMap, false
			}
		}
	case types[0] == "array":
		item := s.ItemSchema()
		if item == nil {
			if tuple := s.Tuple(); len(tuple) > 0 && allOf(tuple, replyString) {
				return replyStrings, false
			}
			return replyValue, false
		}
		r, null := schemaReply(item)
		switch {
		case r == replyString && null:
			return replyNullStrings, false
		case r == replyFloat && null:
			return replyNullFloats, false
		case null:
		case r == replyString:
			return replyStrings, false
		case r == replyInt:
			return replyInts, false
		case r == replyBool:
			return replyBools, false
		}
	}
	return replyValue, false
}

func allOf(ss []*cmdspec.Schema, r reply) bool {
	for _, s := range ss {
		if k, null := schemaReply(s); k != r || null {
			return false
		}
	}
	return true
}

// nullWhen returns the descriptions of a schema's null alternatives (when the server
// answers null), joined; "" when it has none.
func nullWhen(s *cmdspec.Schema) string {
	if s == nil {
		return ""
	}
	var whens []string
	for _, a := range append(append([]*cmdspec.Schema(nil), s.OneOf...), s.AnyOf...) {
		if isNull(a) && a.Description != "" {
			whens = append(whens, strings.TrimSuffix(strings.ReplaceAll(strings.TrimSpace(a.Description), "`", ""), "."))
		}
	}
	return strings.Join(whens, "; ")
}

// isNull reports whether a schema is the null reply.
func isNull(s *cmdspec.Schema) bool {
	t := s.Types()
	return len(t) == 1 && t[0] == "null"
}

// allBoolConsts reports a choice between the integers 0 and 1 (SETNX, EXPIRE,
// SISMEMBER): a boolean.
func allBoolConsts(alts []*cmdspec.Schema) bool {
	seen := 0
	for _, a := range alts {
		n, ok := a.Const.(float64)
		if !ok || n != 0 && n != 1 || strings.Contains(strings.ToLower(a.Description), "error") {
			return false
		}
		seen++
	}
	return seen == 2
}
