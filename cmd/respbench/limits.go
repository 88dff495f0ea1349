package main

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"sync"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
)

// Reference rows of the lock and cache scenarios: the limit a library's figure is read
// against. They are not libraries and never count as a peer.
//
//   - ref-two-gets: two dependent GETs per goroutine over a default Respire client, the
//     round trips of a lock cycle with nothing else.
//   - ref-lock-commands: the lock's own commands (SET key token NX PX, then DELEX, or
//     DELIFEQ, or the compare-and-delete script by EVALSHA, whichever the server has)
//     sent by plain Do: no token generation, no handle, no keep-alive.
//   - ref-map-lookup: an RWMutex-guarded map lookup, what a cached hit cannot beat.

func init() {
	registerLocker(lockerSpec{
		name:      "ref-two-gets",
		reference: true,
		retry:     "reference: GET then GET of the lock's key, no lock at all",
		open:      openTwoGets,
	})
	registerLocker(lockerSpec{
		name:      "ref-lock-commands",
		reference: true,
		retry:     "reference: SET NX PX and the release command by plain Do, a constant token, no handle",
		open:      openLockCommands,
	})
}

// mapLimitSpec is the cache scenario's limit row.
var mapLimitSpec = clientSpec{name: "ref-map-lookup", reference: true, openCached: openMapLookup}

type twoGets struct{ c *respire.Client }

func openTwoGets(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	return twoGets{c}, nil
}

func (g twoGets) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	if _, err := g.c.Do(ctx, "GET", key); err != nil {
		return nil, false, err
	}
	return func(ctx context.Context) error {
		_, err := g.c.Do(ctx, "GET", key)
		return err
	}, true, nil
}

func (g twoGets) close() { g.c.Close() }

// releaseCommand is how a server deletes a key that holds a token.
type releaseCommand uint8

const (
	releaseDelEx   releaseCommand = iota // DELEX key IFEQ token (Redis 8.4+)
	releaseDelIfEq                       // DELIFEQ key token (Valkey 9.0+)
	releaseScript                        // EVALSHA of a compare-and-delete script
)

// compareAndDelete is the classic release script, the same logic as package lock's.
const compareAndDelete = `if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) else return 0 end`

var compareAndDeleteSHA = func() string {
	sum := sha1.Sum([]byte(compareAndDelete))
	return hex.EncodeToString(sum[:])
}()

// refToken is the constant owner token of ref-lock-commands, as long as package lock's.
const refToken = "0123456789abcdef0123456789abcdef"

type lockCommands struct {
	c       *respire.Client
	release releaseCommand
}

// openLockCommands probes which release command the server has, the way package lock
// learns it, once, before anything is measured.
func openLockCommands(ctx context.Context, ep endpoint, _ lockerOptions) (locker, error) {
	c, err := respire.NewClient(ctx, respire.Options{Addrs: ep.addrs, Cluster: ep.cluster})
	if err != nil {
		return nil, err
	}
	l := &lockCommands{c: c, release: releaseScript}
	probe := keyPrefix + "lock:probe"
	switch _, err := c.Do(ctx, "DELEX", probe, "IFEQ", refToken); {
	case err == nil:
		l.release = releaseDelEx
	case resp.IsUnknownCommand(err, "DELEX"):
		if _, err := c.Do(ctx, "DELIFEQ", probe, refToken); err == nil {
			l.release = releaseDelIfEq
		}
	}
	if l.release == releaseScript {
		if _, err := c.Do(ctx, "SCRIPT", "LOAD", compareAndDelete); err != nil {
			c.Close()
			return nil, err
		}
	}
	return l, nil
}

func (l *lockCommands) acquire(ctx context.Context, key string) (func(context.Context) error, bool, error) {
	v, err := l.c.Do(ctx, "SET", key, refToken, "NX", "PX", lockTTL.Milliseconds())
	if err != nil {
		return nil, false, err
	}
	if v.IsNull() {
		return nil, false, nil
	}
	return func(ctx context.Context) error { return l.releaseKey(ctx, key) }, true, nil
}

var errRefNotReleased = errors.New("respbench: ref-lock-commands: the release deleted nothing")

func (l *lockCommands) releaseKey(ctx context.Context, key string) error {
	var v resp.Value
	var err error
	switch l.release {
	case releaseDelEx:
		v, err = l.c.Do(ctx, "DELEX", key, "IFEQ", refToken)
	case releaseDelIfEq:
		v, err = l.c.Do(ctx, "DELIFEQ", key, refToken)
	default:
		v, err = l.c.Do(ctx, "EVALSHA", compareAndDeleteSHA, 1, key, refToken)
	}
	if err != nil {
		return err
	}
	if n, err := v.Int(); err != nil || n != 1 {
		return errors.Join(errRefNotReleased, err)
	}
	return nil
}

func (l *lockCommands) close() { l.c.Close() }

// mapLookup is the cache scenario's limit: the hot key's value in a map behind an
// RWMutex, read the way a client-side cache's hit must at least read.
type mapLookup struct {
	mu sync.RWMutex
	m  map[string]string
}

func openMapLookup(_ context.Context, _ endpoint) (cachedClient, error) {
	return &mapLookup{m: map[string]string{getKey: value16}}, nil
}

func (l *mapLookup) cachedGet(_ context.Context, key string) (string, error) {
	l.mu.RLock()
	v, ok := l.m[key]
	l.mu.RUnlock()
	if !ok {
		return "", errShortValue
	}
	return v, nil
}

func (l *mapLookup) close() {}
