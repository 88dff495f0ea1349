package emulator

import (
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
)

// The Lua scripts the emulated commands run on the backend; each file's header lists
// its KEYS and ARGV.
var (
	//go:embed scripts/set_condition.lua
	setConditionLua string
	//go:embed scripts/delex.lua
	delexLua string
	//go:embed scripts/delifeq.lua
	delifeqLua string
	//go:embed scripts/error.lua
	errorLua string
)

// script is a Lua script with its SHA1, run by EVALSHA with EVAL on NOSCRIPT.
type script struct {
	src string
	sha string
}

func newScript(src string) *script {
	sum := sha1.Sum([]byte(src))
	return &script{src: src, sha: hex.EncodeToString(sum[:])}
}

var (
	setConditionScript = newScript(setConditionLua)
	delexScript        = newScript(delexLua)
	delifeqScript      = newScript(delifeqLua)
	errorScript        = newScript(errorLua)
)
