package cmds

import (
	"strings"
	"testing"

	"github.com/respire/respire/internal/argkind"
	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// TestFewestArgumentsMatchArity builds every generated command with its fewest
// arguments and checks their number against the command's arity, both the one of the
// specification it was generated from and the one the servers report in COMMAND (the
// key table): a parameter missing from a constructor, or an optional argument sent
// when not asked for, shows here.
func TestFewestArgumentsMatchArity(t *testing.T) {
	if len(fewest) < 430 {
		t.Fatalf("%d commands generated, want every command of both servers (about 450)", len(fewest))
	}
	for _, f := range fewest {
		if why, ok := arityExceptions[f.name]; ok {
			t.Logf("%s: arity not checked: %s", f.name, why)
			continue
		}
		args := f.args()
		if _, err := resp.AppendCommand(nil, args...); err != nil {
			t.Errorf("%s: the fewest arguments cannot be sent: %v", f.name, err)
			continue
		}
		words := strings.Split(f.name, "|")
		for i, w := range words {
			if s, _ := args[i].(string); !strings.EqualFold(s, w) {
				t.Errorf("%s: argument %d is %v, want %s", f.name, i, args[i], strings.ToUpper(w))
			}
		}
		checkArity(t, f.name, "specification", f.arity, args)
		if info, ok := command.LookupArgs(args); ok && info.Arity != 0 && strings.EqualFold(info.Name, f.name) {
			checkArity(t, f.name, "COMMAND", info.Arity, args)
		}
	}
}

// arityExceptions are the commands whose fewest arguments by their specification are
// fewer than their arity, and why.
var arityExceptions = map[string]string{}

func checkArity(t *testing.T, name, source string, arity int, args []any) {
	t.Helper()
	switch {
	case arity > 0 && len(args) != arity:
		t.Errorf("%s: %d arguments, %s arity %d: %v", name, len(args), source, arity, args)
	case arity < 0 && len(args) < -arity:
		t.Errorf("%s: %d arguments, %s arity %d (at least %d): %v", name, len(args), source, arity, -arity, args)
	}
}

// TestFewestKeysAreKeys checks the generated layouts against the key table: in every
// command built with its fewest arguments, the arguments the key specifications name
// are the ones the constructor took as keys ("k"), and every key it took is one of
// them.
func TestFewestKeysAreKeys(t *testing.T) {
	checked := 0
	for _, f := range fewest {
		args := f.args()
		info, ok := command.LookupArgs(args)
		if !ok || !strings.EqualFold(info.Name, f.name) || !info.KeysKnown() {
			continue
		}
		keys := command.InfoPrefixableKeyIndexes(info, args, nil)
		checked++
		isKey := map[int]bool{}
		for _, i := range keys {
			isKey[i] = true
			if args[i] != "k" {
				t.Errorf("%s: argument %d (%v) is a key by the key table, not by the constructor: %v", f.name, i, args[i], args)
			}
		}
		for i, a := range args {
			if a == "k" && !isKey[i] {
				t.Errorf("%s: argument %d was taken as a key, the key table does not find it: %v", f.name, i, args)
			}
		}
	}
	if checked < 300 {
		t.Errorf("only %d commands checked against the key table", checked)
	}
}

// TestCommandsSendTheirName checks that every generated command sends, as its first
// argument, an *argkind.Name of its own: the name the server receives (a subcommand's
// container) and the key table's entry of the command, so that the client need not
// look the name up; Args gives the name as a string.
func TestCommandsSendTheirName(t *testing.T) {
	for _, f := range fewest {
		sent := f.sent()
		name, ok := sent[0].(*argkind.Name)
		if !ok {
			t.Errorf("%s: sends %T %v as its name, want an *argkind.Name", f.name, sent[0], sent[0])
			continue
		}
		if want := strings.ToUpper(strings.Split(f.name, "|")[0]); name.Text != want {
			t.Errorf("%s: sends the name %q, want %q", f.name, name.Text, want)
		}
		info, known := command.Lookup(f.name)
		switch entry, _ := name.Entry.(*command.Info); {
		case known && entry != info:
			t.Errorf("%s: its name carries the entry %v, want the key table's %v", f.name, name.Entry, info)
		case !known && name.Entry != nil:
			t.Errorf("%s: its name carries the entry %v, which the key table lacks", f.name, name.Entry)
		}
		if args := f.args(); args[0] != name.Text {
			t.Errorf("%s: Args gives %#v as its name, want %q", f.name, args[0], name.Text)
		}
	}
}
