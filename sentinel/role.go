package sentinel

import (
	"context"
	"fmt"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// Roles as ROLE reports them.
const (
	RoleMaster   = "master"
	RoleReplica  = "slave"
	RoleSentinel = "sentinel"
)

// Role returns the role of the server at the other end of cn: "master", "slave" or
// "sentinel", from ROLE. A user whom an ACL denies ROLE is asked with a plain HELLO
// (which does not change the protocol), whose reply carries the role too.
func Role(ctx context.Context, cn *conn.Conn) (string, error) {
	v, err := cn.Do(ctx, "ROLE")
	if resp.HasCode(err, "NOPERM") {
		return helloRole(ctx, cn)
	}
	if err != nil {
		return "", err
	}
	elems, err := v.Array()
	if err != nil || len(elems) == 0 {
		return "", fmt.Errorf("sentinel: ROLE on %s: unexpected reply %v", cn.Addr(), v)
	}
	return elems[0].Text()
}

func helloRole(ctx context.Context, cn *conn.Conn) (string, error) {
	v, err := cn.Do(ctx, "HELLO")
	if err != nil {
		return "", fmt.Errorf("sentinel: cannot learn the role of %s (ROLE denied, HELLO failed): %w", cn.Addr(), err)
	}
	m, err := v.Map()
	if err != nil {
		return "", fmt.Errorf("sentinel: HELLO on %s: %w", cn.Addr(), err)
	}
	role, err := m["role"].Text()
	if err != nil {
		return "", fmt.Errorf("sentinel: HELLO on %s has no role", cn.Addr())
	}
	if role == "replica" {
		role = RoleReplica
	}
	return role, nil
}

// CheckMaster returns nil if cn's server is a master, and an error matching
// ErrNotMaster if it reports another role. Run it on every new connection to a master
// a Sentinel named, before the connection is used: a Sentinel can be out of date.
func CheckMaster(ctx context.Context, cn *conn.Conn) error {
	return checkRole(ctx, cn, RoleMaster, ErrNotMaster)
}

// CheckReplica returns nil if cn's server is a replica, and an error matching
// ErrNoReplica otherwise.
func CheckReplica(ctx context.Context, cn *conn.Conn) error {
	return checkRole(ctx, cn, RoleReplica, ErrNoReplica)
}

func checkRole(ctx context.Context, cn *conn.Conn, want string, mismatch error) error {
	role, err := Role(ctx, cn)
	if err != nil {
		return err
	}
	if role != want {
		return fmt.Errorf("%w: %s reports role %q, want %q", mismatch, cn.Addr(), role, want)
	}
	return nil
}
