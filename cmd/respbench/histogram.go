package main

import (
	"math"
	"math/bits"
	"time"
)

// The histogram keeps 2^subBits buckets per power of two, so a value is known to within
// 1/2^subBits (under 0.8%) of itself, like an HDR histogram with two significant
// digits. Values below 2^(subBits+1) ns get a bucket each.
const (
	subBits     = 7
	subBuckets  = 1 << subBits
	maxShift    = 40 - subBits - 1 // values up to 2^40 ns (18 minutes); longer ones are clamped
	numBuckets  = (maxShift + 2) * subBuckets
	maxRecorded = 1<<40 - 1
)

// histogram records durations in nanoseconds into log-linear buckets. Recording costs
// a few instructions and never allocates, so every operation can be recorded. One
// histogram belongs to one goroutine; merge them after the goroutines stop.
type histogram struct {
	counts [numBuckets]uint64
	n      uint64
	min    uint64
	max    uint64
}

func newHistogram() *histogram { return &histogram{min: math.MaxUint64} }

// record adds one duration. Negative durations count as zero.
func (h *histogram) record(d time.Duration) {
	v := uint64(0)
	if d > 0 {
		v = uint64(d)
	}
	if v > maxRecorded {
		v = maxRecorded
	}
	h.counts[bucketOf(v)]++
	h.n++
	if v < h.min {
		h.min = v
	}
	if v > h.max {
		h.max = v
	}
}

// bucketOf returns the index of the bucket holding v (v <= maxRecorded).
func bucketOf(v uint64) int {
	if v < 2*subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1 // >= 1
	return shift*subBuckets + int(v>>shift)
}

// bucketRange returns the smallest and largest value of bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*subBuckets {
		return uint64(i), uint64(i)
	}
	shift := i/subBuckets - 1
	top := uint64(i - shift*subBuckets)
	return top << shift, (top+1)<<shift - 1
}

// merge adds o's counts to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.min = min(h.min, o.min)
	h.max = max(h.max, o.max)
}

// count returns the number of recorded values.
func (h *histogram) count() uint64 { return h.n }

// quantile returns the value at quantile q (0 < q <= 1): the middle of the bucket that
// holds the ceil(q*n)-th smallest value, clamped to the recorded minimum and maximum,
// and the maximum itself for the largest rank. It returns 0 for an empty histogram.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(1, min(rank, h.n))
	if rank == h.n {
		return time.Duration(h.max)
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen < rank {
			continue
		}
		lo, hi := bucketRange(i)
		mid := lo + (hi-lo)/2
		return time.Duration(max(h.min, min(mid, h.max)))
	}
	return time.Duration(h.max)
}
