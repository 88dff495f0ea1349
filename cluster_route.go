package respire

import (
	"context"
	"errors"

	"github.com/respire/respire/conn"
)

// errClusterPending is returned until Cluster routing lands.
var errClusterPending = errors.New("respire: Cluster routing is not available yet")

func newClusterRouter(ctx context.Context, o *Options, copts conn.Options) (router, error) {
	return nil, errClusterPending
}

// clusterSlot returns the hash slot of a command's keys.
func clusterSlot(args []any) int { return anySlot }
