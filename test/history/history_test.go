package history

import (
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// op builds a finished operation spanning [call, ret] milliseconds.
func op(client int, kind string, in, out any, outcome Outcome, call, ret int) Op {
	return Op{Client: client, Kind: kind, Input: in, Output: out, Outcome: outcome, Call: time.Duration(call) * time.Millisecond, Return: time.Duration(ret) * time.Millisecond}
}

func TestRecorderTimesAndPending(t *testing.T) {
	r := NewRecorder()
	a := r.Begin(1, "x", "a")
	b := r.Begin(2, "x", "b")
	a.End(OK, "a", nil)
	a.End(Failed, nil, errors.New("second end ignored"))
	ops := r.Ops()
	if len(ops) != 2 || ops[0].Outcome != OK || ops[0].Return < ops[0].Call {
		t.Fatalf("first op = %v", ops[0])
	}
	if ops[1].Outcome != Unknown || ops[1].ID != b.ID() {
		t.Fatalf("pending op must read as unknown: %v", ops[1])
	}
	id := r.Add(Op{Client: 3, Kind: "x", Outcome: OK, Call: 0, Return: r.Now()})
	if got := r.Ops(); got[0].ID != id {
		t.Fatalf("added op with call 0 sorts first, got %v", got[0])
	}
}

func TestCheckers(t *testing.T) {
	w := func(tok int64, v string) FenceWrite { return FenceWrite{Token: tok, Value: v} }
	cases := []struct {
		name  string
		check func([]Op) []Violation
		ops   []Op
		want  int
	}{
		{"exclusive/sequential", CheckExclusive, []Op{op(1, "hold", nil, nil, OK, 0, 10), op(2, "hold", nil, nil, OK, 11, 20)}, 0},
		{"exclusive/overlap", CheckExclusive, []Op{op(1, "hold", nil, nil, OK, 0, 10), op(2, "hold", nil, nil, OK, 5, 20)}, 1},
		{"exclusive/same-holder", CheckExclusive, []Op{op(1, "hold", nil, nil, OK, 0, 10), op(1, "hold", nil, nil, OK, 5, 20)}, 0},
		{"exclusive/touching", CheckExclusive, []Op{op(1, "hold", nil, nil, OK, 0, 10), op(2, "hold", nil, nil, OK, 10, 20)}, 0},

		{"tokens/increasing", func(o []Op) []Violation { return CheckTokensIncrease(o, "acquire") },
			[]Op{op(1, "acquire", nil, int64(1), OK, 0, 1), op(2, "acquire", nil, int64(2), OK, 2, 3)}, 0},
		{"tokens/concurrent-any-order", func(o []Op) []Violation { return CheckTokensIncrease(o, "acquire") },
			[]Op{op(1, "acquire", nil, int64(2), OK, 0, 5), op(2, "acquire", nil, int64(1), OK, 1, 3)}, 0},
		{"tokens/repeat", func(o []Op) []Violation { return CheckTokensIncrease(o, "acquire") },
			[]Op{op(1, "acquire", nil, int64(3), OK, 0, 1), op(2, "acquire", nil, int64(3), OK, 2, 3)}, 1},
		{"tokens/regress", func(o []Op) []Violation { return CheckTokensIncrease(o, "acquire") },
			[]Op{op(1, "acquire", nil, int64(5), OK, 0, 1), op(2, "acquire", nil, int64(7), OK, 2, 3), op(3, "acquire", nil, int64(6), OK, 4, 5)}, 1},
		{"tokens/failed-ignored", func(o []Op) []Violation { return CheckTokensIncrease(o, "acquire") },
			[]Op{op(1, "acquire", nil, int64(5), OK, 0, 1), op(2, "acquire", nil, int64(0), Failed, 2, 3)}, 0},

		{"register/fenced", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(1, KindFencedWrite, w(1, "a"), true, OK, 0, 1), op(2, KindFencedWrite, w(2, "b"), true, OK, 2, 3),
				op(1, KindFencedWrite, w(1, "late"), false, OK, 4, 5), op(3, KindFencedRead, FenceRead{}, "b", OK, 6, 7)}, 0},
		{"register/stale-accepted", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(2, KindFencedWrite, w(2, "b"), true, OK, 0, 1), op(1, KindFencedWrite, w(1, "late"), true, OK, 2, 3)}, 1},
		{"register/fresh-refused", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(1, KindFencedWrite, w(1, "a"), true, OK, 0, 1), op(2, KindFencedWrite, w(2, "b"), false, OK, 2, 3)}, 1},
		{"register/stale-read", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(1, KindFencedWrite, w(1, "a"), true, OK, 0, 1), op(2, KindFencedWrite, w(2, "b"), true, OK, 2, 3), op(3, KindFencedRead, FenceRead{}, "a", OK, 4, 5)}, 1},
		{"register/unknown-may-land-later", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(1, KindFencedWrite, w(3, "c"), nil, Unknown, 0, 1), op(2, KindFencedWrite, w(2, "b"), true, OK, 2, 3), op(3, KindFencedRead, FenceRead{}, "c", OK, 4, 5)}, 0},
		{"register/failed-never-lands", func(o []Op) []Violation { return CheckFencedRegister(o, 10*time.Second) },
			[]Op{op(1, KindFencedWrite, w(3, "c"), nil, Failed, 0, 1), op(3, KindFencedRead, FenceRead{}, "c", OK, 4, 5)}, 1},

		{"stale-refused/ok", CheckStaleRefused, []Op{op(2, KindFencedWrite, w(2, "b"), true, OK, 0, 1), op(1, KindFencedWrite, w(1, "a"), false, OK, 2, 3)}, 0},
		{"stale-refused/accepted", CheckStaleRefused, []Op{op(2, KindFencedWrite, w(2, "b"), true, OK, 0, 1), op(1, KindFencedWrite, w(1, "a"), true, OK, 2, 3)}, 1},

		{"replies/own", func(o []Op) []Violation { return CheckOwnReplies(o) },
			[]Op{op(1, "echo", "id-1", "id-1", OK, 0, 1), op(2, "echo", "id-2", nil, Unknown, 0, 1)}, 0},
		{"replies/swapped", func(o []Op) []Violation { return CheckOwnReplies(o, "echo") },
			[]Op{op(1, "echo", "id-1", "id-2", OK, 0, 1), op(2, "echo", "id-2", "id-1", OK, 0, 1), op(3, "other", "x", "y", OK, 0, 1)}, 2},

		{"lost/none", func(o []Op) []Violation {
			return CheckNoLostWrites(o, "add", map[string][]string{"k": {"a"}})
		}, []Op{op(1, "add", Element{"k", "a"}, nil, OK, 0, 1), op(1, "add", Element{"k", "b"}, nil, Unknown, 0, 1)}, 0},
		{"lost/acknowledged-missing", func(o []Op) []Violation {
			return CheckNoLostWrites(o, "add", map[string][]string{"k": {"a"}})
		}, []Op{op(1, "add", Element{"k", "a"}, nil, OK, 0, 1), op(1, "add", Element{"k", "b"}, nil, OK, 0, 1)}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.check(tc.ops)
			if len(got) != tc.want {
				t.Fatalf("got %d violations, want %d: %v", len(got), tc.want, got)
			}
		})
	}
}

func TestSectionSeesOverlapAtEntry(t *testing.T) {
	r := NewRecorder()
	s := NewSection(r)
	s.Enter(1)
	s.Exit(1)
	s.Enter(2)
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("sequential stays: %v", v)
	}
	s.Enter(3)
	s.Exit(3)
	s.Exit(2)
	if v := s.Violations(); len(v) != 1 {
		t.Fatalf("overlapping stays: got %v, want one violation", v)
	}
	if v := CheckExclusive(r.Ops()); len(v) != 1 {
		t.Fatalf("CheckExclusive over the recorded stays: got %v, want one", v)
	}
}

func TestRecorderConcurrent(t *testing.T) {
	r := NewRecorder()
	var wg sync.WaitGroup
	for c := range 8 {
		wg.Go(func() {
			for range 100 {
				r.Begin(c, "echo", c).End(OK, c, nil)
			}
		})
	}
	wg.Wait()
	ops := r.Ops()
	if len(ops) != 800 || len(CheckOwnReplies(ops)) != 0 {
		t.Fatalf("got %d ops, violations %v", len(ops), CheckOwnReplies(ops))
	}
}
