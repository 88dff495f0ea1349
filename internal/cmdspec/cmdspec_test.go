package cmdspec

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParse(t *testing.T) {
	cmds, err := Parse([]byte(`{"CAPA": {"summary": "s", "group": "connection", "since": "8.0.0",
		"arity": -3, "container": "CLIENT", "command_flags": ["NOSCRIPT"],
		"key_specs": [{"flags": ["RO"], "begin_search": {"index": {"pos": 1}},
			"find_keys": {"range": {"lastkey": -1, "step": 1, "limit": 0}}}],
		"reply_schema": {"const": "OK"},
		"arguments": [{"name": "capability", "type": "oneof", "multiple": "true",
			"arguments": [{"name": "redirect", "type": "pure-token"}]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := cmds[0]
	if c.Name != "client|capa" || c.Arity != -3 || !c.HasFlag("NOSCRIPT") {
		t.Errorf("got %+v", c)
	}
	if a := c.Args[0]; !a.Multiple || a.Args[0].Token != "REDIRECT" {
		t.Errorf("argument %+v: a multiple spelt \"true\" and a keyword without a token", a)
	}
	if ks := c.KeySpecs[0]; ks.Begin != "index" || ks.Pos != 1 || ks.Find != "range" || ks.LastKey != -1 {
		t.Errorf("key spec %+v", ks)
	}
	if c.Reply == nil || c.Reply.Const != "OK" {
		t.Errorf("reply %+v", c.Reply)
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		`{"X": {"arity": 0}}`,
		`{"X": {"arity": 1, "arguments": [{"name": "a", "type": "blob"}]}}`,
		`{"X": {"arity": 1, "arguments": [{"name": "a", "type": "block"}]}}`,
		`{"X": {"arity": 1, "arguments": [{"name": "a", "type": "key", "optional": "maybe"}]}}`,
		`[]`,
	} {
		if _, err := Parse([]byte(bad)); !errors.Is(err, ErrSpec) {
			t.Errorf("%s: err %v, want ErrSpec", bad, err)
		}
	}
}
