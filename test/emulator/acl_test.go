package emulator

import "testing"

// aclCase is one command by one ACL user and the reply of each profile.
type aclCase struct {
	user string
	cmd  []string
	want map[Profile]string // missing profiles: want[Redis7] would be wrong, so all are listed
}

// TestNoPerm checks the NOPERM texts per profile for denied commands and keys, for
// forwarded and emulated commands: DELEX and DELIFEQ need DEL, SET IFEQ needs SET,
// and none needs EVAL.
func TestNoPerm(t *testing.T) {
	const (
		syntax     = "-ERR syntax error\r\n"
		newKey     = "-NOPERM No permissions to access a key\r\n"
		oldKey     = "-NOPERM this user has no permissions to access one of the keys used as arguments\r\n"
		unknownDel = "-ERR unknown command 'DELEX', with args beginning with: 'lock:1' 'IFEQ' 'v' \r\n"
		unknownDif = "-ERR unknown command 'DELIFEQ', with args beginning with: 'lock:1' 'v' \r\n"
	)
	newCmd := func(user, name string) string {
		return "-NOPERM User " + user + " has no permissions to run the '" + name + "' command\r\n"
	}
	oldCmd := func(name string) string {
		return "-NOPERM this user has no permissions to run the '" + name + "' command\r\n"
	}
	all := func(s string) map[Profile]string {
		return map[Profile]string{Redis7: s, Redis84: s, Valkey81: s, Valkey90: s}
	}
	cases := []aclCase{
		// A user without DEL: DELEX and DELIFEQ are denied where they exist and unknown
		// elsewhere (lookup comes before the ACL check).
		{"lim", args("DELEX", "lock:1", "IFEQ", "v"), map[Profile]string{
			Redis7: unknownDel, Redis84: newCmd("lim", "delex"), Valkey81: unknownDel, Valkey90: unknownDel}},
		{"lim", args("DELIFEQ", "lock:1", "v"), map[Profile]string{
			Redis7: unknownDif, Redis84: unknownDif, Valkey81: unknownDif, Valkey90: newCmd("lim", "delifeq")}},
		{"lim", args("DELEX"), map[Profile]string{ // arity comes before the ACL check
			Redis7:   "-ERR unknown command 'DELEX', with args beginning with: \r\n",
			Redis84:  "-ERR wrong number of arguments for 'delex' command\r\n",
			Valkey81: "-ERR unknown command 'DELEX', with args beginning with: \r\n",
			Valkey90: "-ERR unknown command 'DELEX', with args beginning with: \r\n"}},
		// Forwarded commands get the backend's NOPERM, reworded.
		{"lim", args("INCR", "lock:1"), map[Profile]string{
			Redis7: oldCmd("incr"), Redis84: newCmd("lim", "incr"), Valkey81: newCmd("lim", "incr"), Valkey90: newCmd("lim", "incr")}},
		{"lim", args("DEL", "lock:1"), map[Profile]string{
			Redis7: oldCmd("del"), Redis84: newCmd("lim", "del"), Valkey81: newCmd("lim", "del"), Valkey90: newCmd("lim", "del")}},
		{"lim", args("CLIENT", "KILL", "ID", "999999"), map[Profile]string{
			Redis7: oldCmd("client|kill"), Redis84: newCmd("lim", "client|kill"), Valkey81: newCmd("lim", "client|kill"), Valkey90: newCmd("lim", "client|kill")}},
		// A user without SET: SET IFEQ is denied as SET.
		{"noset", args("SET", "lock:1", "v", "IFEQ", "v", "PX", "30000"), map[Profile]string{
			Redis7: oldCmd("set"), Redis84: newCmd("noset", "set"), Valkey81: newCmd("noset", "set"), Valkey90: newCmd("noset", "set")}},
		{"noset", args("SET", "lock:1", "v", "IFEQ"), map[Profile]string{ // ACL before syntax
			Redis7: oldCmd("set"), Redis84: newCmd("noset", "set"), Valkey81: newCmd("noset", "set"), Valkey90: newCmd("noset", "set")}},
		// A key-restricted user, on a key outside its pattern.
		{"keyuser", args("SET", "other", "v"), map[Profile]string{
			Redis7: oldKey, Redis84: newKey, Valkey81: newKey, Valkey90: newKey}},
		{"keyuser", args("SET", "other", "v", "IFEQ", "v"), map[Profile]string{
			Redis7: oldKey, Redis84: newKey, Valkey81: newKey, Valkey90: newKey}},
		{"keyuser", args("DELEX", "other", "IFEQ", "v"), map[Profile]string{
			Redis7:   "-ERR unknown command 'DELEX', with args beginning with: 'other' 'IFEQ' 'v' \r\n",
			Redis84:  newKey,
			Valkey81: "-ERR unknown command 'DELEX', with args beginning with: 'other' 'IFEQ' 'v' \r\n",
			Valkey90: "-ERR unknown command 'DELEX', with args beginning with: 'other' 'IFEQ' 'v' \r\n"}},
		{"keyuser", args("DELIFEQ", "other", "v"), map[Profile]string{
			Redis7:   "-ERR unknown command 'DELIFEQ', with args beginning with: 'other' 'v' \r\n",
			Redis84:  "-ERR unknown command 'DELIFEQ', with args beginning with: 'other' 'v' \r\n",
			Valkey81: "-ERR unknown command 'DELIFEQ', with args beginning with: 'other' 'v' \r\n",
			Valkey90: newKey}},
		{"keyuser", args("SET", "lock:1", "v", "IFEQ", "v"), map[Profile]string{
			Redis7: syntax, Redis84: "$-1\r\n", Valkey81: "$-1\r\n", Valkey90: "$-1\r\n"}},
		// A user without EVAL still uses the native commands.
		{"noeval", args("SET", "lock:1", "v", "NX", "PX", "30000"), all("+OK\r\n")},
		{"noeval", args("SET", "lock:1", "v", "IFEQ", "v", "PX", "30000"), map[Profile]string{
			Redis7: syntax, Redis84: "+OK\r\n", Valkey81: "+OK\r\n", Valkey90: "+OK\r\n"}},
		{"noeval", args("DELIFEQ", "lock:1", "v"), map[Profile]string{
			Redis7: unknownDif, Redis84: unknownDif, Valkey81: unknownDif, Valkey90: ":1\r\n"}},
		{"noeval", args("SET", "lock:1", "v", "NX"), map[Profile]string{
			Redis7: "$-1\r\n", Redis84: "$-1\r\n", Valkey81: "$-1\r\n", Valkey90: "+OK\r\n"}},
		{"noeval", args("DELEX", "lock:1", "IFEQ", "v"), map[Profile]string{
			Redis7: unknownDel, Redis84: ":1\r\n", Valkey81: unknownDel, Valkey90: unknownDel}},
		{"noeval", args("EVAL", "return 1", "0"), map[Profile]string{
			Redis7: oldCmd("eval"), Redis84: newCmd("noeval", "eval"), Valkey81: newCmd("noeval", "eval"), Valkey90: newCmd("noeval", "eval")}},
	}
	srv := startBackend(t)
	for _, p := range tableProfiles {
		t.Run(string(p), func(t *testing.T) {
			srv.Do(t, "FLUSHALL")
			e := Start(t, Config{Backend: srv.Addr(), Profile: p})
			conns := map[string]*rawClient{}
			for _, c := range cases {
				if conns[c.user] == nil {
					conns[c.user] = dialAs(t, e.Addr(), c.user)
				}
				if got := conns[c.user].do(c.cmd...); got != c.want[p] {
					t.Errorf("%s: %q\n got  %q\n want %q", c.user, c.cmd, got, c.want[p])
				}
			}
		})
	}
}

// TestNoPermRESP3 checks that an emulated command's NOPERM is the same under RESP3
// and that a denied command changes nothing.
func TestNoPermRESP3(t *testing.T) {
	srv, e := startPair(t, Redis84)
	srv.Do(t, "SET", "lock:1", "v")
	c := dialAs(t, e.Addr(), "lim")
	c.value("HELLO", "3")
	if got := c.do("DELEX", "lock:1", "IFEQ", "v"); got != "-NOPERM User lim has no permissions to run the 'delex' command\r\n" {
		t.Errorf("DELEX = %q", got)
	}
	if got := srv.Do(t, "GET", "lock:1"); got != "v" {
		t.Errorf("after a denied DELEX the key holds %q", got)
	}
}
