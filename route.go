package respire

import (
	"context"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/internal/route"
)

// router is what the tracked connections of the client-side cache (cached.go) use of
// the client's route.Router, by slot.
type router interface {
	shared(ctx context.Context, slot int) (*conn.Conn, error)
	dial(ctx context.Context, slot int, adjust func(*conn.Options)) (*conn.Conn, error)
}

// routerSlots is a route.Router seen as a router.
type routerSlots struct{ r *route.Router }

func (s routerSlots) shared(ctx context.Context, slot int) (*conn.Conn, error) {
	return s.r.Shared(ctx, route.Slot(slot))
}

func (s routerSlots) dial(ctx context.Context, slot int, adjust func(*conn.Options)) (*conn.Conn, error) {
	return s.r.Dial(ctx, route.Slot(slot), adjust)
}
