//go:build unix

package cmds

import (
	"context"
	"errors"
	"testing"

	"github.com/respire/respire"
	"github.com/respire/respire/resp"
)

// GEOHASH answers a null for a member that is not in the set, which its schema does
// not say: the reply keeps the others and marks that one. A null inside a list that
// has no room for one is an unexpected reply, never Nil, which would tell the caller
// the key is missing.
func TestNullElements(t *testing.T) {
	forEachProtocol(t, func(t *testing.T, c *respire.Client, _ string) {
		ctx := context.Background()
		if _, err := c.Do(ctx, "GEOADD", "nulls:geo", 13.361389, 38.115556, "Palermo"); err != nil {
			t.Fatal(err)
		}
		hashes, err := GeoHash("nulls:geo", "Palermo", "nowhere").Do(ctx, c)
		if err != nil || len(hashes) != 2 || !hashes[0].Valid || hashes[0].V == "" || hashes[1].Valid {
			t.Fatalf("GEOHASH with a missing member: %+v %v", hashes, err)
		}
	})
	_, err := decodeStrings(resp.Array(resp.BulkString("a"), resp.Null()), nil)
	if !errors.Is(err, ErrUnexpectedReply) || errors.Is(err, Nil) {
		t.Fatalf("a null inside a list of strings: %v, want ErrUnexpectedReply and not Nil", err)
	}
}
