package emulator

import (
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/respire/respire/resp"
)

// StartCluster starts an emulator in front of each backend node of a Redis Cluster,
// node i answering as profiles[i] (Redis7 where profiles is shorter), and each one
// rewriting every backend's address to that backend's emulator, so clients that start
// from any emulator stay on the emulators. The emulators are returned in the order of
// backends.
func StartCluster(t testing.TB, backends []string, profiles []Profile) []*Emulator {
	t.Helper()
	var table atomic.Pointer[map[string]string]
	rewrite := func(addr string) string {
		if to, ok := (*table.Load())[addr]; ok {
			return to
		}
		return addr
	}
	table.Store(&map[string]string{})
	emus := make([]*Emulator, len(backends))
	m := map[string]string{}
	for i, b := range backends {
		p := Redis7
		if i < len(profiles) {
			p = profiles[i]
		}
		emus[i] = Start(t, Config{Backend: b, Profile: p, RewriteAddr: rewrite})
		if emus[i] == nil {
			return nil
		}
		m[b] = emus[i].Addr()
	}
	table.Store(&m)
	return emus
}

// Cluster support: with Config.RewriteAddr set, an emulator in front of a Redis Cluster
// node keeps clients on the emulators. Node addresses in CLUSTER SHARDS, CLUSTER SLOTS,
// CLUSTER NODES and CLUSTER REPLICAS replies and in MOVED and ASK errors (forwarded or
// produced by an emulated command) are passed through RewriteAddr, so a client that
// follows the topology or a redirection dials the emulator of the node it means.
// ASKING is honoured by emulated commands too: the admin connection sends ASKING before
// the script of an emulated command that follows one.

// rewriteRedirect rewrites the address of a MOVED or ASK error message; ok is false for
// other messages.
func rewriteRedirect(msg string, addr func(string) string) (string, bool) {
	f := strings.Fields(msg)
	if len(f) != 3 || (f[0] != "MOVED" && f[0] != "ASK") {
		return msg, false
	}
	return f[0] + " " + f[1] + " " + addr(f[2]), true
}

// rewriteCluster rewrites the node addresses of a CLUSTER subcommand's reply; ok is
// false when the reply is not one that names nodes.
func rewriteCluster(sub string, v resp.Value, addr func(string) string) (resp.Value, bool) {
	switch sub {
	case "CLUSTER SHARDS":
		return rewriteShards(v, addr)
	case "CLUSTER SLOTS":
		return rewriteSlots(v, addr)
	case "CLUSTER NODES", "CLUSTER REPLICAS", "CLUSTER SLAVES":
		return rewriteNodeLines(v, addr)
	}
	return v, false
}

// rewriteShards rewrites ip, endpoint and port of every node of a CLUSTER SHARDS reply
// (RESP3 maps or RESP2 flat arrays).
func rewriteShards(v resp.Value, addr func(string) string) (resp.Value, bool) {
	shards, err := v.Array()
	if err != nil || v.Kind() != resp.KindArray {
		return v, false
	}
	out := make([]resp.Value, len(shards))
	for i, sh := range shards {
		out[i] = mapFields(sh, func(key string, val resp.Value) resp.Value {
			if key != "nodes" {
				return val
			}
			nodes, err := val.Array()
			if err != nil {
				return val
			}
			rewritten := make([]resp.Value, len(nodes))
			for j, n := range nodes {
				rewritten[j] = rewriteShardNode(n, addr)
			}
			return resp.Array(rewritten...)
		})
	}
	return resp.Array(out...), true
}

func rewriteShardNode(n resp.Value, addr func(string) string) resp.Value {
	m, err := n.Map()
	if err != nil {
		return n
	}
	host, _ := m["endpoint"].Text()
	if host == "" || host == "?" {
		host, _ = m["ip"].Text()
	}
	port, err := m["port"].Int()
	if err != nil {
		return n
	}
	newHost, newPort, ok := splitAddr(addr(net.JoinHostPort(host, strconv.FormatInt(port, 10))))
	if !ok {
		return n
	}
	return mapFields(n, func(key string, val resp.Value) resp.Value {
		switch key {
		case "ip", "endpoint":
			return resp.BulkString(newHost)
		case "port":
			return resp.Integer(int64(newPort))
		}
		return val
	})
}

// mapFields rebuilds a RESP3 map or RESP2 flat array with each value passed through f.
func mapFields(v resp.Value, f func(key string, val resp.Value) resp.Value) resp.Value {
	elems, err := v.Array()
	if err != nil || len(elems)%2 != 0 {
		return v
	}
	kv := make([]resp.Value, len(elems))
	for i := 0; i+1 < len(elems); i += 2 {
		k, _ := elems[i].Text()
		kv[i], kv[i+1] = elems[i], f(k, elems[i+1])
	}
	if v.Kind() == resp.KindMap {
		return resp.Map(kv...)
	}
	return resp.Array(kv...)
}

// rewriteSlots rewrites the [host, port, ...] nodes of a CLUSTER SLOTS reply.
func rewriteSlots(v resp.Value, addr func(string) string) (resp.Value, bool) {
	ranges, err := v.Array()
	if err != nil {
		return v, false
	}
	out := make([]resp.Value, len(ranges))
	for i, r := range ranges {
		elems, err := r.Array()
		if err != nil || len(elems) < 3 {
			out[i] = r
			continue
		}
		rewritten := append([]resp.Value(nil), elems...)
		for j := 2; j < len(elems); j++ {
			node, err := elems[j].Array()
			if err != nil || len(node) < 2 {
				continue
			}
			host, _ := node[0].Text()
			port, err := node[1].Int()
			if err != nil {
				continue
			}
			newHost, newPort, ok := splitAddr(addr(net.JoinHostPort(host, strconv.FormatInt(port, 10))))
			if !ok {
				continue
			}
			n := append([]resp.Value(nil), node...)
			n[0], n[1] = resp.BulkString(newHost), resp.Integer(int64(newPort))
			rewritten[j] = resp.Array(n...)
		}
		out[i] = resp.Array(rewritten...)
	}
	return resp.Array(out...), true
}

// rewriteNodeLines rewrites the ip:port@cport field of CLUSTER NODES lines (a bulk or
// verbatim string, or an array of lines for CLUSTER REPLICAS).
func rewriteNodeLines(v resp.Value, addr func(string) string) (resp.Value, bool) {
	line := func(l string) string {
		f := strings.SplitN(l, " ", 3)
		if len(f) < 3 {
			return l
		}
		hostPort, rest, _ := strings.Cut(f[1], "@")
		return f[0] + " " + addr(hostPort) + "@" + rest + " " + f[2]
	}
	if elems, err := v.Array(); err == nil {
		out := make([]resp.Value, len(elems))
		for i, e := range elems {
			s, _ := e.Text()
			out[i] = resp.BulkString(line(s))
		}
		return resp.Array(out...), true
	}
	text, err := v.Text()
	if err != nil {
		return v, false
	}
	var b strings.Builder
	for l := range strings.Lines(text) {
		body, nl := strings.CutSuffix(l, "\n")
		b.WriteString(line(body))
		if nl {
			b.WriteByte('\n')
		}
	}
	return resp.BulkString(b.String()), true
}

func splitAddr(a string) (string, int, bool) {
	host, port, err := net.SplitHostPort(a)
	if err != nil {
		return "", 0, false
	}
	p, err := strconv.Atoi(port)
	return host, p, err == nil
}
