package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/test/testserver"
)

// Named types of the kinds Do accepts, as users declare them.
type (
	testPriority int32
	testKey      string
	testScore    float64
	testFlag     bool
	testCommand  string
	testBlob     []byte
)

// TestDoTakesNamedTypes: an argument of a named type is taken by its kind wherever the
// client reads arguments (issue 23, point 2): encoded like its underlying type, given
// the key prefix, read as a count (numkeys), recognised as a command name (state and
// blocking checks, COMMAND INFO) and cached by its key. time.Duration is sent as
// nanoseconds. They used to fail with "unsupported type".
func TestDoTakesNamedTypes(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	for _, proto := range protocols {
		t.Run("RESP"+strconv.Itoa(proto), func(t *testing.T) {
			ctx := context.Background()
			c := testclient.New(t, respire.Options{Addrs: []string{srv.Addr()}, Protocol: proto, KeyPrefix: "p:"})
			key := testKey("named-" + t.Name())
			full := "p:" + string(key)

			// 90,000 ns after PX reads as 90,000 ms: a Duration is its nanoseconds.
			if _, err := c.Do(ctx, "SET", key, testBlob("v"), "PX", 90*time.Microsecond); err != nil {
				t.Fatalf("SET with a Duration: %v", err)
			}
			if pttl, _ := strconv.Atoi(srv.Do(t, "PTTL", full)); pttl <= 80_000 || pttl > 90_000 {
				t.Errorf("PTTL after PX 90µs = %d; want about 90000 (the Duration's nanoseconds)", pttl)
			}
			if got := srv.Do(t, "GET", full); got != "v" {
				t.Errorf("GET %s = %q; want v", full, got)
			}

			zkey := key + ":z"
			if _, err := c.Do(ctx, "ZADD", zkey, testScore(2.5), testPriority(-3), testScore(0.125), testFlag(true)); err != nil {
				t.Fatalf("ZADD with named numbers: %v", err)
			}
			if got := srv.Do(t, "ZSCORE", "p:"+string(zkey), "-3"); got != "2.5" {
				t.Errorf("ZSCORE -3 = %q; want 2.5", got)
			}
			if got := srv.Do(t, "ZSCORE", "p:"+string(zkey), "1"); got != "0.125" {
				t.Errorf("ZSCORE 1 = %q; want 0.125", got)
			}

			// numkeys as a named integer: the key after it gets the prefix.
			v, err := c.Do(ctx, "EVAL", "return redis.call('GET', KEYS[1])", testPriority(1), key)
			if s, _ := v.Text(); err != nil || s != "v" {
				t.Errorf("EVAL with a named numkeys and key: %v %v; want v", v, err)
			}
			v, err = c.Do(ctx, testCommand("get"), key)
			if s, _ := v.Text(); err != nil || s != "v" {
				t.Errorf("GET named as a testCommand: %v %v; want v", v, err)
			}
			if _, err := c.Do(ctx, "SET", key+":json", json.RawMessage(`{"a":1}`)); err != nil {
				t.Fatal(err)
			}
			if got := srv.Do(t, "GET", full+":json"); got != `{"a":1}` {
				t.Errorf("raw JSON stored as %q", got)
			}

			// A state-changing command is refused whatever the type of its name.
			if _, err := c.Do(ctx, testCommand("SUBSCRIBE"), "ch"); !errors.Is(err, respire.ErrConnState) {
				t.Errorf("SUBSCRIBE named as a testCommand: %v; want ErrConnState", err)
			}
			// A blocking one is known as blocking: refused in a batch, run alone by Do.
			if _, err := c.DoMulti(ctx, []any{testCommand("BLPOP"), key + ":l", 1}); !errors.Is(err, respire.ErrBlockingInBatch) {
				t.Errorf("BLPOP named as a testCommand in a batch: %v; want ErrBlockingInBatch", err)
			}
			srv.Do(t, "RPUSH", full+":l", "job")
			v, err = c.Do(ctx, testCommand("BLPOP"), key+":l", testPriority(1))
			if err != nil || v.String() != `["`+full+`:l", "job"]` {
				t.Errorf("BLPOP named as a testCommand: %v %v", v, err)
			}
		})
	}
}

// TestDoCachedTakesANamedKey: the cache files a key of a named string type under its
// text, so a second read is a hit.
func TestDoCachedTakesANamedKey(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{})
	c := cachedClientT(t, srv, respire.Options{})
	ctx := context.Background()
	srv.Do(t, "SET", "cached-named", "v")
	for range 2 {
		v, err := c.DoCached(ctx, time.Minute, "GET", testKey("cached-named"))
		if s, _ := v.Text(); err != nil || s != "v" {
			t.Fatalf("DoCached GET of a named key: %v %v", v, err)
		}
	}
	if n := srv.Calls(t, "get"); n != 1 {
		t.Errorf("the server ran GET %d times; want 1 (the second read a hit)", n)
	}
}
