package mono

import (
	"testing"
	"time"
)

func TestReadingsRoundTrip(t *testing.T) {
	a := Now()
	if a < 1 {
		t.Fatalf("Now() = %d, want at least 1", a)
	}
	if at := Time(a); at.Before(Start()) || time.Since(at) < 0 {
		t.Errorf("Time(%d) = %v, not between the start %v and now", a, at, Start())
	}
	if Time(1) != Start() {
		t.Errorf("Time(1) = %v, want the start %v", Time(1), Start())
	}
	if b := Now(); b < a {
		t.Errorf("the clock went back: %d after %d", b, a)
	}
}
