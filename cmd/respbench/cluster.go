package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/respire/respire/conn"
)

// endpoint is what the participants connect to: one server, or the seed nodes of a
// Redis Cluster (-cluster), which every client is then opened in its cluster mode for.
type endpoint struct {
	addrs   []string
	cluster bool
}

func (e endpoint) String() string { return strings.Join(e.addrs, ",") }

// splitAddrs reads -addr: one host:port, or comma-separated seeds.
func splitAddrs(s string) []string {
	var out []string
	for a := range strings.SplitSeq(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// clusterMasters is the size of the cluster -cluster starts: three masters, no
// replicas (replication would only add load on the same machine).
const clusterMasters = 3

// clusterReadyTimeout bounds the assembly of the embedded cluster.
const clusterReadyTimeout = 30 * time.Second

// lookServer finds the server binary to start: bin (-server) when set, else
// redis-server on the PATH.
func lookServer(bin string) (string, error) {
	if bin != "" {
		path, err := exec.LookPath(bin)
		if err != nil {
			return "", fmt.Errorf("respbench: -server %s: %w", bin, err)
		}
		return path, nil
	}
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errNoServerBinary
	}
	return path, nil
}

// embeddedCluster is the cluster respbench starts for -cluster without -addr.
type embeddedCluster struct {
	nodes []*server
	dir   string
}

// startCluster starts three redis-server processes with cluster support on free
// loopback ports, gives each a third of the slots (CLUSTER ADDSLOTSRANGE), joins them
// (CLUSTER MEET) and returns once every node reports cluster_state:ok.
func startCluster(ctx context.Context, serverBin string) (*embeddedCluster, error) {
	bin, err := lookServer(serverBin)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "respbench-cluster-")
	if err != nil {
		return nil, fmt.Errorf("respbench: temporary directory: %w", err)
	}
	cl := &embeddedCluster{dir: dir}
	fail := func(err error) (*embeddedCluster, error) {
		cl.stop()
		return nil, err
	}
	for i := range clusterMasters {
		nodeDir := filepath.Join(dir, strconv.Itoa(i))
		if err := os.Mkdir(nodeDir, 0o700); err != nil {
			return fail(err)
		}
		s, err := launchRetrying(ctx, bin, nodeDir,
			"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000")
		if err != nil {
			return fail(err)
		}
		cl.nodes = append(cl.nodes, s)
	}
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()
	conns := make([]*conn.Conn, len(cl.nodes))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	for i, s := range cl.nodes {
		if conns[i], err = conn.Dial(ctx, s.addr, conn.Options{}); err != nil {
			return fail(err)
		}
		first, last := i*16384/clusterMasters, (i+1)*16384/clusterMasters-1
		for _, cmd := range [][]any{
			{"CLUSTER", "SET-CONFIG-EPOCH", i + 1},
			{"CLUSTER", "ADDSLOTSRANGE", first, last},
		} {
			if _, err := conns[i].Do(ctx, cmd...); err != nil {
				return fail(fmt.Errorf("respbench: cluster node %s: %v: %w", s.addr, cmd, err))
			}
		}
	}
	for _, s := range cl.nodes[1:] {
		host, port, _ := strings.Cut(s.addr, ":")
		if _, err := conns[0].Do(ctx, "CLUSTER", "MEET", host, port); err != nil {
			return fail(fmt.Errorf("respbench: CLUSTER MEET %s: %w", s.addr, err))
		}
	}
	for i, c := range conns {
		for {
			v, err := c.Do(ctx, "CLUSTER", "INFO")
			if err != nil {
				return fail(fmt.Errorf("respbench: the cluster did not form: %s: %w", cl.nodes[i].addr, err))
			}
			info, _ := v.Text()
			if strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(clusterMasters)) && knowsAddrs(ctx, c) {
				break
			}
			select {
			case <-ctx.Done():
				return fail(fmt.Errorf("respbench: the cluster did not form within %v", clusterReadyTimeout))
			case <-time.After(serverPollInterval):
			}
		}
	}
	return cl, nil
}

// knowsAddrs reports whether the node names every node, itself included, by its
// address: a node learns its own IP only from its peers, and a client that reads the
// topology before then is told to reconnect elsewhere a moment later.
func knowsAddrs(ctx context.Context, c *conn.Conn) bool {
	v, err := c.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return false
	}
	text, _ := v.Text()
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) < 2 || strings.HasPrefix(f[1], ":") {
			return false
		}
	}
	return true
}

// seeds returns every node's address.
func (cl *embeddedCluster) seeds() []string {
	out := make([]string, len(cl.nodes))
	for i, s := range cl.nodes {
		out[i] = s.addr
	}
	return out
}

// stop stops every node and removes the cluster's directory.
func (cl *embeddedCluster) stop() {
	for _, s := range cl.nodes {
		s.stop()
	}
	os.RemoveAll(cl.dir)
}
