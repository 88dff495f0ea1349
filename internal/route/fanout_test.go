package route

import (
	"testing"

	"github.com/respire/respire/internal/command"
	"github.com/respire/respire/resp"
)

// TestMergerPolicies combines the replies of three nodes by each response policy.
func TestMergerPolicies(t *testing.T) {
	ints := func(ns ...int64) []resp.Value {
		out := make([]resp.Value, len(ns))
		for i, n := range ns {
			out[i] = resp.Integer(n)
		}
		return out
	}
	arr := func(ns ...int64) resp.Value { return resp.Array(ints(ns...)...) }
	ok := resp.SimpleString("OK")
	cases := []struct {
		name    string
		policy  command.ResponsePolicy
		replies []resp.Value
		want    resp.Value
		wantErr bool
	}{
		{"all succeeded", command.ResponseAllSucceeded, []resp.Value{ok, ok, ok}, ok, false},
		{"sum", command.ResponseAggSum, ints(3, 4, 5), resp.Integer(12), false},
		{"sum of zero", command.ResponseAggSum, ints(0, 0, 0), resp.Integer(0), false},
		{"min", command.ResponseAggMin, ints(2, 1, 3), resp.Integer(1), false},
		{"max", command.ResponseAggMax, ints(2, 1, 3), resp.Integer(3), false},
		{"and", command.ResponseAggLogicalAnd, ints(1, 0, 1), resp.Integer(0), false},
		{"or", command.ResponseAggLogicalOr, ints(0, 0, 1), resp.Integer(1), false},
		{"and element-wise", command.ResponseAggLogicalAnd, []resp.Value{arr(1, 1), arr(1, 0), arr(1, 1)}, arr(1, 0), false},
		{"sum element-wise", command.ResponseAggSum, []resp.Value{arr(1, 2), arr(3, 4), arr(5, 6)}, arr(9, 12), false},
		{"default arrays", command.ResponseDefault, []resp.Value{arr(1), arr(), arr(2, 3)}, arr(1, 2, 3), false},
		{"default maps", command.ResponseDefault,
			[]resp.Value{resp.Map(resp.BulkString("a"), resp.Integer(1)), resp.Map(resp.BulkString("b"), resp.Integer(2)), resp.Map()},
			resp.Map(resp.BulkString("a"), resp.Integer(1), resp.BulkString("b"), resp.Integer(2)), false},
		{"default plain", command.ResponseDefault, []resp.Value{ok, ok, ok}, ok, false},
		{"sum of a string", command.ResponseAggSum, []resp.Value{resp.Integer(1), ok, resp.Integer(2)}, resp.Value{}, true},
		{"element-wise of unequal lengths", command.ResponseAggMin, []resp.Value{arr(1, 2), arr(1), arr(1, 2)}, resp.Value{}, true},
		{"default of mixed kinds", command.ResponseDefault, []resp.Value{arr(1), resp.Map(), arr(2)}, resp.Value{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var m merger
			var err error
			for _, r := range tc.replies {
				if err = m.add(tc.policy, r); err != nil {
					break
				}
			}
			if tc.wantErr {
				if err == nil {
					t.Fatalf("combined into %v, want an error", m.result())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := m.result(); got.String() != tc.want.String() || got.Kind() != tc.want.Kind() {
				t.Fatalf("got %v (%v), want %v (%v)", got, got.Kind(), tc.want, tc.want.Kind())
			}
		})
	}
}
