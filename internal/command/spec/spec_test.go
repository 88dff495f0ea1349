package spec

import (
	"slices"
	"strings"
	"testing"
)

// Entries of each generation, as a caller decodes them.
func TestParse(t *testing.T) {
	getSpec := []any{"flags", []any{"RO", "access"},
		"begin_search", []any{"type", "index", "spec", []any{"index", int64(1)}},
		"find_keys", []any{"type", "range", "spec", []any{"lastkey", int64(0), "keystep", int64(1), "limit", int64(0)}}}
	tests := []struct {
		name    string
		entry   any
		want    Command
		wantErr string
	}{
		{"redis 7 GET", []any{"GET", int64(2), []any{"readonly", "fast"}, int64(1), int64(1), int64(1), []any{"@read"}, []any{}, []any{getSpec}, []any{}},
			Command{Name: "get", Arity: 2, Flags: []string{"readonly", "fast"}, First: 1, Last: 1, Step: 1,
				KeySpecs: []KeySpec{{Flags: []string{"RO", "access"}, Begin: "index", Pos: 1, Find: "range", KeyStep: 1}}}, ""},
		{"redis 6 MSET: legacy positions as a spec", []any{"mset", int64(-3), []any{"write", "denyoom"}, int64(1), int64(-1), int64(2), []any{"@write"}},
			Command{Name: "mset", Arity: -3, Flags: []string{"write", "denyoom"}, First: 1, Last: -1, Step: 2, Legacy: true,
				KeySpecs: []KeySpec{{Flags: []string{"RW", "access", "update"}, Begin: "index", Pos: 1, Find: "range", LastKey: -1, KeyStep: 2}}}, ""},
		{"redis 6 RENAME", []any{"rename", int64(3), []any{"write"}, int64(1), int64(2), int64(1), []any{}},
			Command{Name: "rename", Arity: 3, Flags: []string{"write"}, First: 1, Last: 2, Step: 1, Legacy: true,
				KeySpecs: []KeySpec{{Flags: []string{"RW", "access", "update"}, Begin: "index", Pos: 1, Find: "range", LastKey: 1, KeyStep: 1}}}, ""},
		{"redis 6 PING: no keys", []any{"ping", int64(-1), []any{"stale"}, int64(0), int64(0), int64(0), []any{}},
			Command{Name: "ping", Arity: -1, Flags: []string{"stale"}, Legacy: true}, ""},
		{"short", []any{"x", int64(1)}, Command{}, "at least 6"},
		{"not an array", "x", Command{}, "at least 6"},
		{"bad arity", []any{"x", "2", []any{}, int64(0), int64(0), int64(0)}, Command{}, "arity"},
		{"legacy mismatch", []any{"x", int64(2), []any{}, int64(2), int64(2), int64(1), []any{}, []any{}, []any{getSpec}, []any{}}, Command{}, "legacy first key 2"},
		{"subcommand misnamed", []any{"x", int64(-2), []any{}, int64(0), int64(0), int64(0), []any{}, []any{}, []any{},
			[]any{[]any{"y|z", int64(2), []any{}, int64(0), int64(0), int64(0), []any{}, []any{}, []any{}, []any{}}}}, Command{}, "not named x|"},
	}
	for _, tt := range tests {
		got, err := Parse(tt.entry)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want one with %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if got.Name != tt.want.Name || got.Arity != tt.want.Arity || !slices.Equal(got.Flags, tt.want.Flags) ||
			got.First != tt.want.First || got.Last != tt.want.Last || got.Step != tt.want.Step || got.Legacy != tt.want.Legacy ||
			!slices.EqualFunc(got.KeySpecs, tt.want.KeySpecs, func(a, b KeySpec) bool {
				return slices.Equal(a.Flags, b.Flags) && a.Begin == b.Begin && a.Pos == b.Pos && a.Keyword == b.Keyword &&
					a.StartFrom == b.StartFrom && a.Find == b.Find && a.LastKey == b.LastKey && a.KeyStep == b.KeyStep &&
					a.Limit == b.Limit && a.KeyNumIdx == b.KeyNumIdx && a.FirstKey == b.FirstKey
			}) {
			t.Errorf("%s:\n got  %+v\n want %+v", tt.name, *got, tt.want)
		}
	}
}

func TestParseAllRefusesDuplicates(t *testing.T) {
	e := []any{"ping", int64(-1), []any{}, int64(0), int64(0), int64(0), []any{}}
	if _, err := ParseAll([]any{e, e}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate entries: %v", err)
	}
}
