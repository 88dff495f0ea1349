package lock

import (
	"fmt"
	"time"
)

// Option adjusts one acquisition.
type Option func(*acquireOptions)

type acquireOptions struct {
	wait       time.Duration
	retryEvery time.Duration
	keepAlive  bool
}

// DefaultRetryEvery is how often a waiting acquisition tries again unless
// WithRetryEvery says otherwise.
const DefaultRetryEvery = 50 * time.Millisecond

// WithWait makes the acquisition try again, while another owner holds the lock, until d
// has passed. Without it an acquisition tries once.
func WithWait(d time.Duration) Option { return func(o *acquireOptions) { o.wait = d } }

// WithRetryEvery sets the interval between tries of a waiting acquisition
// (DefaultRetryEvery otherwise).
func WithRetryEvery(d time.Duration) Option { return func(o *acquireOptions) { o.retryEvery = d } }

// WithKeepAlive starts a keep-alive owned by the returned lock once it is acquired; its
// context is the lock's KeepAliveContext. The acquisition's own context does not
// control the keep-alive: Stop, Release or Close do.
func WithKeepAlive() Option { return func(o *acquireOptions) { o.keepAlive = true } }

func buildOptions(opts []Option) (acquireOptions, error) {
	if len(opts) == 0 {
		return acquireOptions{retryEvery: DefaultRetryEvery}, nil
	}
	return applyOptions(opts)
}

// applyOptions is apart from buildOptions because handing &o to option functions moves o
// to the heap: calls without options should not pay for that.
func applyOptions(opts []Option) (acquireOptions, error) {
	o := acquireOptions{retryEvery: DefaultRetryEvery}
	for _, opt := range opts {
		if opt == nil {
			return o, fmt.Errorf("%w: nil option", ErrInvalidArg)
		}
		opt(&o)
	}
	switch {
	case o.wait < 0:
		return o, fmt.Errorf("%w: negative wait %v", ErrInvalidArg, o.wait)
	case o.retryEvery <= 0:
		return o, fmt.Errorf("%w: retry interval %v must be positive", ErrInvalidArg, o.retryEvery)
	}
	return o, nil
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
