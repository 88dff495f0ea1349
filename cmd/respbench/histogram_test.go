package main

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketRoundTrip(t *testing.T) {
	values := []uint64{0, 1, 2, 127, 128, 255, 256, 257, 511, 512, 1000, 1023, 1024, 1 << 20, 1<<20 + 1, 123456789, maxRecorded}
	r := rand.New(rand.NewPCG(1, 2))
	for range 10000 {
		values = append(values, r.Uint64N(maxRecorded))
	}
	for _, v := range values {
		i := bucketOf(v)
		if i < 0 || i >= numBuckets {
			t.Fatalf("bucketOf(%d) = %d, outside [0, %d)", v, i, numBuckets)
		}
		lo, hi := bucketRange(i)
		if v < lo || v > hi {
			t.Fatalf("value %d in bucket %d covering [%d, %d]", v, i, lo, hi)
		}
		// The promise: a bucket is under 1/128 of its values wide.
		if width := hi - lo; float64(width) > float64(lo)/subBuckets {
			t.Fatalf("bucket %d [%d, %d] is wider than 1/%d of its values", i, lo, hi, subBuckets)
		}
	}
}

func TestBucketsAreContiguous(t *testing.T) {
	_, prevHi := bucketRange(0)
	for i := 1; i < numBuckets; i++ {
		lo, hi := bucketRange(i)
		if lo != prevHi+1 {
			t.Fatalf("bucket %d starts at %d, previous ended at %d", i, lo, prevHi)
		}
		prevHi = hi
	}
	if prevHi != maxRecorded {
		t.Fatalf("last bucket ends at %d, want %d", prevHi, uint64(maxRecorded))
	}
}

func TestQuantiles(t *testing.T) {
	h := newHistogram()
	var all []time.Duration
	r := rand.New(rand.NewPCG(3, 4))
	for range 200000 {
		// Log-uniform from 1µs to 100ms, like real latencies.
		d := time.Duration(math.Exp(math.Log(1e3) + r.Float64()*(math.Log(1e8)-math.Log(1e3))))
		h.record(d)
		all = append(all, d)
	}
	slices.Sort(all)
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := all[int(math.Ceil(q*float64(len(all))))-1]
		got := h.quantile(q)
		if rel := math.Abs(float64(got-exact)) / float64(exact); rel > 0.01 {
			t.Errorf("quantile(%v) = %v, exact %v (off by %.2f%%)", q, got, exact, rel*100)
		}
	}
	if got := h.quantile(1); got != all[len(all)-1] {
		t.Errorf("quantile(1) = %v, want the maximum %v", got, all[len(all)-1])
	}
}

func TestQuantileSmall(t *testing.T) {
	h := newHistogram()
	if got := h.quantile(0.5); got != 0 {
		t.Fatalf("empty quantile = %v, want 0", got)
	}
	for _, d := range []time.Duration{10, 20, 30, 40, 50, 60, 70, 80, 90, 100} {
		h.record(d)
	}
	// Values under 256ns have a bucket each, so these are exact.
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.1, 10}, {0.5, 50}, {0.55, 60}, {0.99, 100}, {1, 100}} {
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestRecordClampsAndMerges(t *testing.T) {
	a, b := newHistogram(), newHistogram()
	a.record(-5)
	a.record(time.Hour)
	b.record(time.Millisecond)
	a.merge(b)
	if a.count() != 3 {
		t.Fatalf("count = %d, want 3", a.count())
	}
	if got := a.quantile(0.01); got != 0 {
		t.Errorf("a negative duration recorded as %v, want 0", got)
	}
	if got := a.quantile(1); got != maxRecorded {
		t.Errorf("an hour recorded as %v, want the clamp %v", got, time.Duration(maxRecorded))
	}
	if got := a.quantile(0.5); math.Abs(float64(got-time.Millisecond)) > float64(time.Millisecond)/subBuckets {
		t.Errorf("merged median = %v, want about 1ms", got)
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	h := newHistogram()
	if n := testing.AllocsPerRun(1000, func() { h.record(1234567) }); n != 0 {
		t.Fatalf("record allocates %v times", n)
	}
}
