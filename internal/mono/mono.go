// Package mono is the module's one monotonic clock, in nanoseconds, so that readings
// taken by one package can be compared by another: a cache hit reads it once and
// hands the reading to the connection whose lag it checks, instead of each reading
// its own clock (a clock reading costs a fair share of a hit).
package mono

import "time"

var start = time.Now()

// Start is the clock's origin: Now counts from it.
func Start() time.Time { return start }

// Now returns the nanoseconds since Start, plus one, so that no reading is 0 and 0
// can mean "never".
func Now() int64 { return int64(time.Since(start)) + 1 }

// Time returns the time.Time of the reading t.
func Time(t int64) time.Time { return start.Add(time.Duration(t - 1)) }
