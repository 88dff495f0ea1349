package respire

import (
	"context"
	"fmt"

	"github.com/respire/respire/conn"
)

// newRouter picks the router for the deployment Options describe.
func newRouter(ctx context.Context, o *Options, copts conn.Options) (router, error) {
	switch {
	case o.Cluster:
		return newClusterRouter(ctx, o, copts)
	case o.SentinelMaster != "":
		return newSentinelRouter(ctx, o, copts)
	}
	r, err := newStandalone(o.Addrs[0], copts, o)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	return r, nil
}
