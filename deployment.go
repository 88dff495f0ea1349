package respire

// Standalone reports whether c serves one server directly: neither a Cluster nor a
// Sentinel-managed master. Package coordination asks it without sending anything, so
// that a Redlock group refuses a client whose endpoints are one deployment, not
// independent votes.
func (c *Client) Standalone() bool { return c.route.Standalone() }
