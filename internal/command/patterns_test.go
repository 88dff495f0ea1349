package command

import (
	"slices"
	"testing"
)

func TestPatternIndexes(t *testing.T) {
	sorts := []keyCase{
		line("SORT k"),
		line("SORT k BY w_* GET # GET o_* LIMIT 0 10 DESC ALPHA STORE dst", 3, 7),
		line("SORT k BY nosort GET # GET fixed"),
		line("SORT k BY w_*->f GET h_*->g", 3, 5),
		line("SORT k LIMIT by get GET o_*", 6), // LIMIT values spelled like options
		line("SORT k STORE get GET o_*", 5),    // so is a STORE destination
		line("SORT_RO k BY w_* GET o_* ALPHA", 3, 5),
		line("SORT k GET"), // a GET with no pattern is a syntax error
		line("SORT k BY w_* BY v_*", 3, 5),
	}
	for _, c := range sorts {
		if got := SortPatternIndexes(c.args, nil); !slices.Equal(got, c.want) {
			t.Errorf("SortPatternIndexes(%q) = %v, want %v", c.args, got, c.want)
		}
	}
	// The server finds the '*' with strchr, which stops at a NUL byte; numbers hold none.
	if got := SortPatternIndexes([]any{"SORT", "k", "BY", "a\x00*", "GET", 5, "GET", []byte("o_*")}, nil); !slices.Equal(got, []int{7}) {
		t.Errorf("SortPatternIndexes with NUL, number and []byte patterns = %v, want [7]", got)
	}
	scans := []keyCase{
		line("SCAN 0"),
		line("SCAN 0 MATCH a*", 3),
		line("SCAN 0 COUNT 10 match a* TYPE string", 5),
		line("SCAN 0 MATCH a* MATCH b*", 3, 5),
		line("SCAN 0 COUNT match"), // "match" is COUNT's value here
		line("SCAN 0 MATCH"),
	}
	for _, c := range scans {
		if got := ScanMatchIndexes(c.args, nil); !slices.Equal(got, c.want) {
			t.Errorf("ScanMatchIndexes(%q) = %v, want %v", c.args, got, c.want)
		}
	}
}
