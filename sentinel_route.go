package respire

import (
	"context"
	"errors"

	"github.com/respire/respire/conn"
)

// errSentinelPending is returned until Sentinel routing lands.
var errSentinelPending = errors.New("respire: Sentinel routing is not available yet")

func newSentinelRouter(ctx context.Context, o *Options, copts conn.Options) (router, error) {
	return nil, errSentinelPending
}
