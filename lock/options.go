package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/respire/respire/internal/backoff"
)

// Option adjusts one acquisition.
type Option func(*acquireOptions)

type acquireOptions struct {
	wait        time.Duration
	retry       RetryStrategy
	maxAttempts int  // 0: as many as the wait budget allows
	badAttempts *int // a WithMaxAttempts under 1, reported by applyOptions
	keepAlive   bool
}

// DefaultRetryEvery is how often a waiting acquisition tries again unless
// WithRetryEvery or WithRetry says otherwise.
const DefaultRetryEvery = 50 * time.Millisecond

// RetryStrategy chooses the pause before each further try of a waiting acquisition
// that polls. Make one with FixedRetry or ExponentialRetry; the zero value is invalid.
type RetryStrategy struct {
	base        time.Duration
	max         time.Duration // cap of the exponential growth
	exponential bool
}

// FixedRetry pauses every for every retry.
func FixedRetry(every time.Duration) RetryStrategy { return RetryStrategy{base: every} }

// ExponentialRetry pauses a random time before each retry, uniform between 0 and
// base·2^(n-1) for the n-th retry, capped at max ("full jitter"): many waiters spread
// out rather than retrying in step, and a long wait asks less of the server.
func ExponentialRetry(base, max time.Duration) RetryStrategy {
	return RetryStrategy{base: base, max: max, exponential: true}
}

// Delay returns the pause before retry n (1 for the first retry): every for a
// FixedRetry, a random one within the growing ceiling for an ExponentialRetry. It lets
// other waits (package coordination's) space their retries as lock's do.
func (s RetryStrategy) Delay(n int) time.Duration {
	if !s.exponential {
		return s.base
	}
	return backoff.Full(s.base, s.max, n)
}

// Pause sleeps for Delay(n), or until ctx ends, whose cause it returns.
func (s RetryStrategy) Pause(ctx context.Context, n int) error { return sleep(ctx, s.Delay(n)) }

func (s RetryStrategy) validate() error {
	switch {
	case s.base <= 0:
		return fmt.Errorf("%w: retry interval %v must be positive", ErrInvalidArg, s.base)
	case s.exponential && s.max < s.base:
		return fmt.Errorf("%w: exponential retry cap %v is below its base %v", ErrInvalidArg, s.max, s.base)
	}
	return nil
}

// WithWait makes the acquisition try again, while another owner holds the lock (or a
// try could not be sent), until d has passed. Without it an acquisition tries once.
//
// On a client with RESP3 client-side caching (Options.ClientSideCache) the wait does
// not poll: it sleeps until the server reports a change of the key (a release, an
// expiry, an overwrite), with a timer at the key's remaining TTL in case the report is
// lost (respire.Client.WatchKey). Otherwise it polls with the retry strategy
// (WithRetry, WithRetryEvery). A try that was not sent is retried with the strategy's
// pause either way.
func WithWait(d time.Duration) Option { return func(o *acquireOptions) { o.wait = d } }

// WithRetryEvery sets the interval between tries of a waiting acquisition
// (DefaultRetryEvery otherwise); it is WithRetry(FixedRetry(d)).
func WithRetryEvery(d time.Duration) Option { return WithRetry(FixedRetry(d)) }

// WithRetry sets the pause between tries of a waiting acquisition (FixedRetry of
// DefaultRetryEvery otherwise).
func WithRetry(s RetryStrategy) Option { return func(o *acquireOptions) { o.retry = s } }

// WithMaxAttempts caps the tries of a waiting acquisition at n, the first one included:
// the wait ends at its budget (WithWait) or after n tries, whichever comes first.
// Without WithWait an acquisition tries once.
func WithMaxAttempts(n int) Option {
	return func(o *acquireOptions) {
		if n < 1 {
			o.badAttempts = &n
			return
		}
		o.maxAttempts = n
	}
}

// WithKeepAlive starts a keep-alive owned by the returned lock once it is acquired; its
// context is the lock's KeepAliveContext. The acquisition's own context does not
// control the keep-alive: Stop, Release or Close do.
func WithKeepAlive() Option { return func(o *acquireOptions) { o.keepAlive = true } }

func buildOptions(opts []Option) (acquireOptions, error) {
	if len(opts) == 0 {
		return acquireOptions{retry: FixedRetry(DefaultRetryEvery)}, nil
	}
	return applyOptions(opts)
}

// applyOptions is apart from buildOptions because handing &o to option functions moves o
// to the heap: calls without options should not pay for that.
func applyOptions(opts []Option) (acquireOptions, error) {
	o := acquireOptions{retry: FixedRetry(DefaultRetryEvery)}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil option", ErrInvalidArg)
		}
		opt(&o)
	}
	switch {
	case o.wait < 0:
		return o, fmt.Errorf("%w: negative wait %v", ErrInvalidArg, o.wait)
	case o.badAttempts != nil:
		return o, fmt.Errorf("%w: attempt cap %d is under 1", ErrInvalidArg, *o.badAttempts)
	}
	return o, o.retry.validate()
}

// checkKeyTTL validates what every lock operation takes.
func checkKeyTTL(key string, ttl time.Duration) (ms int64, err error) {
	if key == "" {
		return 0, fmt.Errorf("%w: empty key", ErrInvalidArg)
	}
	if ttl < time.Millisecond {
		return 0, fmt.Errorf("%w: TTL %v is under a millisecond", ErrInvalidArg, ttl)
	}
	return ttl.Milliseconds(), nil
}

func checkToken(t Token) error {
	if t.IsZero() {
		return ErrEmptyToken
	}
	return nil
}
