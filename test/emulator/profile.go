package emulator

import (
	"strings"

	"github.com/respire/respire/resp"
)

// Profile names the server an [Emulator] answers as.
type Profile string

// The profiles. Each answers as the server it names does for what the lock code depends
// on (SERVER-REPLIES.md); everything else is the backend's own Redis 7 behaviour.
const (
	// Redis60 answers as Redis 6.0 (replies as recorded from Redis 6.0.16): no SET …
	// IFEQ (the backend's "ERR syntax error" is 6.0's too), no DELEX or DELIFEQ, no
	// CLUSTER SHARDS, no CLIENT NO-EVICT and no CLIENT PAUSE … WRITE; HELLO needs a
	// protocol version; unknown commands are named in backticks, unknown subcommands
	// and NOPERM are worded as 6.x words them; HELLO reports redis 6.0.16.
	Redis60 Profile = "redis-6.0"
	// Redis7 passes every command through to the Redis 7 backend unchanged; only the
	// counters and hooks apply.
	Redis7 Profile = "redis-7"
	// Redis84 adds SET … IFEQ/IFNE, DELEX and the Redis 8 NOPERM texts, and reports
	// itself in HELLO as redis 8.4.0 with the vectorset module (replies as recorded
	// from Redis 8.6.3, which has the 8.4 command set).
	Redis84 Profile = "redis-8.4"
	// Valkey81 adds SET … IFEQ (IFEQ only), Valkey's NOPERM and script error texts,
	// and reports itself in HELLO as valkey 8.1.1.
	Valkey81 Profile = "valkey-8.1"
	// Valkey90 is Valkey81 plus DELIFEQ, reporting itself as valkey 9.0.0 with the
	// lua module (replies as recorded from Valkey 9.1.2).
	Valkey90 Profile = "valkey-9.0"
)

// Profiles lists every profile, for tests that run once per server.
var Profiles = []Profile{Redis60, Redis7, Redis84, Valkey81, Valkey90}

// features is what a profile adds on top of the Redis 7 backend.
type features struct {
	server, version string   // HELLO's server and version fields
	modules         []string // HELLO's modules field, by name
	setConditions   []string // SET options emulated: IFEQ, and for Redis 8.4 also IFNE, IFDEQ, IFDNE
	exclusiveIfeq   bool     // Valkey: IFEQ excludes NX, XX and a second IFEQ in either order
	delex           bool     // DELEX is a command
	delifeq         bool     // DELIFEQ is a command
	newErrorTexts   bool     // Redis 8 / Valkey NOPERM wording
	valkeyScripts   bool     // Valkey's "Unknown command called from script"
	redis6          bool     // Redis 6.x: its error wording, and no CLUSTER SHARDS, CLIENT NO-EVICT, PAUSE WRITE
}

// features returns what p emulates; ok is false for an unknown profile.
func (p Profile) features() (f features, ok bool) {
	switch p {
	case Redis60:
		return features{server: "redis", version: "6.0.16", redis6: true}, true
	case Redis7:
		return features{}, true
	case Redis84:
		return features{
			server: "redis", version: "8.4.0", modules: []string{"vectorset"},
			setConditions: []string{"IFEQ", "IFNE", "IFDEQ", "IFDNE"},
			delex:         true, newErrorTexts: true,
		}, true
	case Valkey81:
		return features{
			server: "valkey", version: "8.1.1",
			setConditions: []string{"IFEQ"}, exclusiveIfeq: true,
			newErrorTexts: true, valkeyScripts: true,
		}, true
	case Valkey90:
		return features{
			server: "valkey", version: "9.0.0", modules: []string{"lua"},
			setConditions: []string{"IFEQ"}, exclusiveIfeq: true,
			delifeq: true, newErrorTexts: true, valkeyScripts: true,
		}, true
	}
	return features{}, false
}

// passThrough reports whether the profile changes nothing at all.
func (f *features) passThrough() bool { return f.server == "" }

// isSetCondition reports whether opt (upper case) is a SET condition the profile knows.
func (f *features) isSetCondition(opt string) bool {
	for _, c := range f.setConditions {
		if c == opt {
			return true
		}
	}
	return false
}

// Error texts of Redis 7 and their newer wording.
const (
	redis7NoPermCmdPrefix = "NOPERM this user has no permissions to run the '"
	noPermCmdSuffix       = "' command"
	redis7NoPermKey       = "NOPERM this user has no permissions to access one of the keys used as arguments"
	redis7NoPermChannel   = "NOPERM this user has no permissions to access one of the channels used as arguments"
	newNoPermKey          = "NOPERM No permissions to access a key"
	newNoPermChannel      = "NOPERM No permissions to access a channel"
	redisScriptUnknown    = "ERR Unknown Redis command called from script"
	valkeyScriptUnknown   = "ERR Unknown command called from script"
)

// noPermCommand is the profile's NOPERM text for a command user may not run; name is
// the command's lower-case name, such as "delex" or "client|kill".
func (f *features) noPermCommand(user, name string) string {
	if !f.newErrorTexts {
		return redis7NoPermCmdPrefix + name + noPermCmdSuffix
	}
	return "NOPERM User " + user + " has no permissions to run the '" + name + noPermCmdSuffix
}

// noPermKey is the profile's NOPERM text for a key the user may not access.
func (f *features) noPermKey() string {
	if !f.newErrorTexts {
		return redis7NoPermKey
	}
	return newNoPermKey
}

// rewriteError translates a Redis 7 error message (without "-") into the profile's
// wording; ok is false when the message stays as it is.
func (f *features) rewriteError(msg, user string) (string, bool) {
	if f.newErrorTexts {
		if rest, ok := strings.CutPrefix(msg, redis7NoPermCmdPrefix); ok && strings.HasSuffix(rest, noPermCmdSuffix) {
			return f.noPermCommand(user, strings.TrimSuffix(rest, noPermCmdSuffix)), true
		}
		switch msg {
		case redis7NoPermKey:
			return newNoPermKey, true
		case redis7NoPermChannel:
			return newNoPermChannel, true
		}
	}
	if f.valkeyScripts {
		if rest, ok := strings.CutPrefix(msg, redisScriptUnknown); ok {
			return valkeyScriptUnknown + rest, true
		}
	}
	return msg, false
}

// rewriteHello replaces the server, version and modules fields of a HELLO reply (a
// RESP3 map or a RESP2 flat array), keeping every other field, the id above all, and
// the order. ok is false when v is not a HELLO reply.
func (f *features) rewriteHello(v resp.Value) (out resp.Value, ok bool) {
	if v.Kind() != resp.KindMap && v.Kind() != resp.KindArray {
		return v, false
	}
	elems, _ := v.Array()
	if len(elems)%2 != 0 {
		return v, false
	}
	kv := make([]resp.Value, len(elems))
	copy(kv, elems)
	resp3 := v.Kind() == resp.KindMap
	for i := 0; i+1 < len(kv); i += 2 {
		key, err := kv[i].Text()
		if err != nil {
			continue
		}
		switch key {
		case "server":
			kv[i+1] = resp.BulkString(f.server)
		case "version":
			kv[i+1] = resp.BulkString(f.version)
		case "modules":
			kv[i+1] = f.moduleList(resp3)
		}
	}
	if resp3 {
		return resp.Map(kv...), true
	}
	return resp.Array(kv...), true
}

// moduleList renders the modules field as the servers do: one map per module with
// name, ver, path and args (a flat array under RESP2). Only the names were recorded
// from the real servers; ver 1, an empty path and no args are this emulator's.
func (f *features) moduleList(resp3 bool) resp.Value {
	mods := make([]resp.Value, 0, len(f.modules))
	for _, name := range f.modules {
		fields := []resp.Value{
			resp.BulkString("name"), resp.BulkString(name),
			resp.BulkString("ver"), resp.Integer(1),
			resp.BulkString("path"), resp.BulkString(""),
			resp.BulkString("args"), resp.Array(),
		}
		if resp3 {
			mods = append(mods, resp.Map(fields...))
		} else {
			mods = append(mods, resp.Array(fields...))
		}
	}
	return resp.Array(mods...)
}
