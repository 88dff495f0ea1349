package script

import (
	"context"
	"crypto/fips140"
	"crypto/sha1"
	"encoding/hex"
	"sync"
	"time"

	"github.com/respire/respire/conn"
)

// Script is a Lua script's source and its digest.
type Script struct {
	src   string
	once  sync.Once
	local string // hex SHA-1 of src; empty where this process may not compute SHA-1
}

// New returns the script for src. It computes nothing, so it may run at init.
func New(src string) *Script { return &Script{src: src} }

// Source returns the script's Lua source, as EVAL takes it.
func (s *Script) Source() string { return s.src }

// Local returns the script's digest computed in this process, and false in FIPS
// 140-only mode, where it may not be.
func (s *Script) Local() (string, bool) {
	s.once.Do(s.hash)
	return s.local, s.local != ""
}

func (s *Script) hash() {
	if fips140.Enforced() {
		return
	}
	sum := sha1.Sum([]byte(s.src))
	s.local = hex.EncodeToString(sum[:])
}

// On returns the digest to run the script by on cn: the local one, or where there is
// none the one cn's server gives.
func (s *Script) On(ctx context.Context, cn *conn.Conn) (string, error) {
	return s.OnBy(ctx, cn, time.Time{})
}

// OnBy is On whose asking cn's server (conn.Conn.ScriptDigestBy) is waited for until
// by at the latest (zero: no bound).
func (s *Script) OnBy(ctx context.Context, cn *conn.Conn, by time.Time) (string, error) {
	if d, ok := s.Local(); ok {
		return d, nil
	}
	return cn.ScriptDigestBy(ctx, by, s.src)
}
