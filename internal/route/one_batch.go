package route

import (
	"context"

	"github.com/respire/respire/conn"
)

// sendBatch sends a pipeline on the shared connection with send, once more on a new
// connection when the first was found broken before anything was written; a failure
// is handed to the backend to learn from. It returns the connection of the last
// attempt (nil when none was had).
func (o *one) sendBatch(ctx context.Context, send func(*conn.Conn) ([]conn.Result, error)) ([]conn.Result, *conn.Conn, error) {
	for attempt := 0; ; attempt++ {
		cn, err := o.shared(ctx, Any())
		if err != nil {
			return nil, nil, err
		}
		res, err := send(cn)
		if err != nil && attempt == 0 && batchRetryable(ctx, err) {
			continue
		}
		if err != nil {
			o.observe(ctx, err)
		}
		return res, cn, err
	}
}
