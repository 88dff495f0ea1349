package cmds

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// TestExpireZeroIsNoExpiration checks that Expire(0) sends no expiration, as go-redis's
// Set(ctx, key, value, 0) does: the server refuses EX 0, and a go-redis user porting
// a call with expiration 0 means a key that does not expire.
func TestExpireZeroIsNoExpiration(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := Set("ez:k", "v").Expire(time.Minute).Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		if _, err := Set("ez:k", "v").Expire(0).Do(ctx, c); err != nil {
			t.Fatalf("SET with Expire(0): %v", err)
		}
		if ttl, err := TTL("ez:k").Do(ctx, c); err != nil || ttl != -1 {
			t.Errorf("TTL after SET with Expire(0): %d, %v; want -1 (no expiration)", ttl, err)
		}
		// The last method of the group wins: Expire(0) undoes KeepTTL.
		if got, want := Set("ez:k", "v").KeepTTL().Expire(0).Args(), []any{"SET", "ez:k", "v"}; !slices.Equal(got, want) {
			t.Errorf("KeepTTL().Expire(0) sends %v, want %v", got, want)
		}
	})
}

// TestMillisecondsAreDurations checks the arguments the servers take in milliseconds
// that the package takes as a time.Duration, as it does every other: RESTORE's ttl,
// WAIT's timeout, XCLAIM's IDLE.
func TestMillisecondsAreDurations(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := Set("ms:src", "v").Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		dump, err := Dump("ms:src").Do(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Restore("ms:dst", 90*time.Second, dump).Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		if ttl, err := PTTL("ms:dst").Do(ctx, c); err != nil || ttl <= 60_000 || ttl > 90_000 {
			t.Errorf("PTTL after RESTORE with a ttl of 90s: %d, %v; want at most 90000 ms", ttl, err)
		}
		if n, err := Wait(0, 10*time.Millisecond).Do(ctx, c); err != nil || n != 0 {
			t.Errorf("WAIT 0 10ms: %d, %v", n, err)
		}
		got := XClaim("ms:s", "g", "c", time.Second, "0-1").Idle(time.Hour).Args()
		if want := []any{"XCLAIM", "ms:s", "g", "c", int64(1000), "0-1", "IDLE", int64(3_600_000)}; !slices.Equal(got, want) {
			t.Errorf("XCLAIM with Idle(time.Hour) sends %v, want %v", got, want)
		}
	})
}

// TestMigrateKeys moves keys with MIGRATE ... "" ... KEYS: EmptyString sends the empty
// key the server requires with KEYS, not the two quote characters of the
// specification's token.
func TestMigrateKeys(t *testing.T) {
	dst := testserver.Start(t, testserver.Config{})
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := MSet(KeyValue{"mig:a", "1"}, KeyValue{"mig:b", "2"}).Do(ctx, c); err != nil {
			t.Fatal(err)
		}
		host, port, err := net.SplitHostPort(dst.Addr())
		if err != nil {
			t.Fatal(err)
		}
		n, err := strconv.ParseInt(port, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Migrate(host, n, 0, 5*time.Second).EmptyString().Replace().Keys("mig:a", "mig:b").Do(ctx, c); err != nil {
			t.Fatalf("MIGRATE with KEYS: %v", err)
		}
		if left, err := Exists("mig:a", "mig:b").Do(ctx, c); err != nil || left != 0 {
			t.Errorf("keys left on the source: %d, %v", left, err)
		}
	})
}

// TestExpiryReadsAreNotCached checks that the reads of an expiry, whose reply changes
// with time and not with the key, have no Cached method: either server calling their
// output nondeterministic is enough (Redis says so of HTTL, Valkey does not).
func TestExpiryReadsAreNotCached(t *testing.T) {
	expiries := []string{"ttl", "pttl", "expiretime", "pexpiretime", "httl", "hpttl", "hexpiretime", "hpexpiretime"}
	found := 0
	for _, f := range fewest {
		if !slices.Contains(expiries, f.name) {
			continue
		}
		found++
		if f.cached != nil {
			t.Errorf("%s has a Cached method", f.name)
		}
	}
	if found != len(expiries) {
		t.Errorf("found %d of the %d expiry reads", found, len(expiries))
	}
}

// TestGeoSearchRequiresFrom checks that GEOSEARCH without FROMMEMBER or FROMLONLAT
// fails before it is sent, as a search without its BY choice does, unless it is
// BYPOLYGON, which needs no centre.
func TestGeoSearchRequiresFrom(t *testing.T) {
	c := benchClient(t)
	ctx := context.Background()
	if _, err := GeoAdd("geo:k", GeoLocation{13.361389, 38.115556, "Palermo"}).Do(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := GeoSearch("geo:k").ByRadius(100, Kilometers).Do(ctx, c); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("GEOSEARCH without FROM: %v, want ErrInvalidArg", err)
	}
	if _, err := GeoSearchStore("geo:dst", "geo:k").ByRadius(100, Kilometers).Do(ctx, c); !errors.Is(err, ErrInvalidArg) {
		t.Errorf("GEOSEARCHSTORE without FROM: %v, want ErrInvalidArg", err)
	}
	found, err := GeoSearch("geo:k").FromLonLat(13.36, 38.11).ByRadius(100, Kilometers).Do(ctx, c)
	if err != nil || len(found) != 1 {
		t.Errorf("GEOSEARCH FROMLONLAT: %v, %v", found, err)
	}
	polygon := GeoSearch("geo:k").ByPolygon(3, 0, 0, 1, 0, 1, 1)
	if v := polygon.argv(); v.bad.kind != problemNone {
		t.Errorf("GEOSEARCH BYPOLYGON without FROM is refused: %v", v.bad.err("GEOSEARCH"))
	}
	// The method sends the keyword that chose it; the caller gives what follows.
	if got, want := fmt.Sprint(polygon.Args()), "[GEOSEARCH geo:k BYPOLYGON 3 0 0 1 0 1 1]"; got != want {
		t.Errorf("GEOSEARCH BYPOLYGON sends %s, want %s", got, want)
	}
}
