package conn

import "context"

// DoEncodedInto is DoEncoded collecting the results into results when its capacity is
// n or more, as StartEncoded does, so that a caller sending batch after batch reuses
// one slice. Like DoEncoded, and unlike StartEncoded, its caller may read the replies
// itself (when the connection is quiet), sparing the reader goroutine's hand-off: a
// Cluster pipeline sends its last part so, having started the others, and collects
// those afterwards, so it waits for nothing else while it holds this read role.
func (c *Conn) DoEncodedInto(ctx context.Context, n int, payload []byte, results []Result) ([]Result, error) {
	p, err := c.startEncoded(ctx, n, payload, results, true)
	if err != nil {
		return nil, err
	}
	return p.Wait()
}
