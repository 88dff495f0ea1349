package route

import "context"

// Deployment says which servers a router serves.
type Deployment struct {
	// Addrs are the one server's address ("host:port"), a Cluster's seeds, or the
	// Sentinels that name Master.
	Addrs []string
	// Cluster: Addrs are seeds of a Cluster.
	Cluster bool
	// Master: Addrs are Sentinels, and the router serves the master they know by this
	// name, with the credentials of the Sentinels' own ACLs.
	Master           string
	SentinelUsername string
	SentinelPassword string
}

// New returns the router of the deployment d: the one place that looks at its kind.
func New(ctx context.Context, d Deployment, o Options) (*Router, error) {
	switch {
	case d.Cluster:
		return NewCluster(ctx, d.Addrs, o)
	case d.Master != "":
		return NewSentinel(ctx, SentinelOptions{
			Sentinels: d.Addrs,
			Master:    d.Master,
			Username:  d.SentinelUsername,
			Password:  d.SentinelPassword,
		}, o)
	}
	return NewStandalone(d.Addrs[0], o)
}
