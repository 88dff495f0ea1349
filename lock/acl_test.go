package lock

import (
	"context"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/internal/testkit/testclient"
	"github.com/respire/respire/resp"
	"github.com/respire/respire/test/testserver"
)

// A user who may not run scripts on a server without native compare commands gets
// NOPERM back; nothing else is tried and nothing changes.
func TestNoPermissionNeverSelectsAnotherPath(t *testing.T) {
	srv := testserver.Start(t, testserver.Config{Users: []testserver.User{
		{Name: "noscript", Password: "pw", Rules: []string{"+@all", "-evalsha", "-eval", "~*"}},
	}})
	locks := New(testclient.At(t, srv.Addr(), respire.Options{Username: "noscript", Password: "pw"}))
	ctx := context.Background()
	mu, err := locks.Acquire(ctx, "acl", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	before := pttl(t, srv, "acl")
	if ok, err := mu.ResetExpiry(ctx, time.Hour); ok || !resp.HasCode(err, "NOPERM") {
		t.Fatalf("renewal without EVALSHA: %v %v", ok, err)
	}
	if pttl(t, srv, "acl") > before {
		t.Fatal("TTL changed")
	}
	if _, err := mu.Release(ctx); !resp.HasCode(err, "NOPERM") {
		t.Fatalf("release without EVALSHA: %v", err)
	}
	if srv.Do(t, "GET", "acl") != mu.Token().b {
		t.Fatal("the lock changed although every path was denied")
	}
	// The handle is still usable once the user may run scripts.
	srv.Do(t, "ACL", "SETUSER", "noscript", "+evalsha", "+eval")
	if out, err := mu.Release(ctx); out != Released || err != nil {
		t.Fatalf("release after the ACL allowed it: %v %v", out, err)
	}
}
