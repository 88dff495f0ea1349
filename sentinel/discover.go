package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// maxSentinels bounds the list a Monitor keeps, whatever the Sentinels report.
const maxSentinels = 64

// discover finds the master: hint first when there is one (the address a
// +switch-master announced), then each Sentinel in turn. An address is accepted only
// once a connection to it answers ROLE with "master".
func (m *Monitor) discover(ctx context.Context, hint string) (string, error) {
	var errs []error
	var failed []string // addresses that failed verification in this discovery
	if hint != "" {
		err := m.verify(ctx, hint)
		if err == nil {
			return hint, nil
		}
		failed = append(failed, hint)
		errs = append(errs, fmt.Errorf("announced master %s: %w", hint, err))
	}
	answered := 0
	var unknownAt []string // Sentinels that do not monitor the name
	for _, s := range m.Sentinels() {
		if ctx.Err() != nil {
			errs = append(errs, context.Cause(ctx))
			break
		}
		addr, err := m.ask(ctx, s)
		switch {
		case errors.Is(err, ErrUnknownMaster):
			answered++
			unknownAt = append(unknownAt, s)
			continue
		case err != nil:
			errs = append(errs, err)
			continue
		}
		answered++
		if slices.Contains(failed, addr) {
			continue // every Sentinel may name the same dead master: dial it once
		}
		if err := m.verify(ctx, addr); err != nil {
			failed = append(failed, addr)
			errs = append(errs, fmt.Errorf("master %s named by Sentinel %s: %w", addr, s, err))
			continue
		}
		m.prefer(s)
		return addr, nil
	}
	joined := errors.Join(errs...)
	switch {
	case answered == 0:
		return "", fmt.Errorf("%w for master %q: %w", ErrNoSentinel, m.cfg.MasterName, joined)
	case len(unknownAt) == answered && joined == nil:
		return "", fmt.Errorf("%w: %q (asked %s)", ErrUnknownMaster, m.cfg.MasterName, strings.Join(unknownAt, ", "))
	case len(unknownAt) == answered:
		return "", fmt.Errorf("%w: %q (asked %s; %w)", ErrUnknownMaster, m.cfg.MasterName, strings.Join(unknownAt, ", "), joined)
	}
	return "", fmt.Errorf("sentinel: no usable master %q: %w", m.cfg.MasterName, joined)
}

// verify dials addr as a data node and checks that it is a master.
func (m *Monitor) verify(ctx context.Context, addr string) error {
	cn, err := conn.Dial(ctx, addr, m.cfg.NodeConn)
	if err != nil {
		return err
	}
	defer cn.Close()
	return CheckMaster(ctx, cn)
}

// ask asks Sentinel s for the master's address, and learns the other Sentinels it
// knows of.
func (m *Monitor) ask(ctx context.Context, s string) (string, error) {
	cn, err := conn.Dial(ctx, s, m.cfg.SentinelConn)
	if err != nil {
		return "", fmt.Errorf("Sentinel %s: %w", s, err)
	}
	defer cn.Close()
	v, err := cn.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", m.cfg.MasterName)
	if err != nil {
		return "", fmt.Errorf("Sentinel %s: %w", s, err)
	}
	if v.IsNull() {
		return "", ErrUnknownMaster
	}
	addr, err := hostPort(v)
	if err != nil {
		return "", fmt.Errorf("Sentinel %s: GET-MASTER-ADDR-BY-NAME: %w", s, err)
	}
	if peers, err := cn.Do(ctx, "SENTINEL", "SENTINELS", m.cfg.MasterName); err == nil {
		m.learn(s, instances(peers, nil))
	}
	return addr, nil
}

// hostPort reads a [host, port] reply.
func hostPort(v resp.Value) (string, error) {
	elems, err := v.Array()
	if err != nil || len(elems) != 2 {
		return "", fmt.Errorf("unexpected reply %v", v)
	}
	host, err1 := elems[0].Text()
	port, err2 := elems[1].Text()
	if err1 != nil || err2 != nil || host == "" || port == "" {
		return "", fmt.Errorf("unexpected reply %v", v)
	}
	return net.JoinHostPort(host, port), nil
}

// instances reads the reply of SENTINEL SENTINELS or SENTINEL REPLICAS (a list of
// field maps, flat arrays under RESP2) and returns the addresses of the instances
// that keep pass.
func instances(v resp.Value, keep func(fields map[string]string) bool) []string {
	elems, err := v.Array()
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range elems {
		m, err := e.Map()
		if err != nil {
			continue
		}
		fields := make(map[string]string, len(m))
		for k, fv := range m {
			fields[k], _ = fv.Text()
		}
		if fields["ip"] == "" || fields["port"] == "" {
			continue
		}
		if keep != nil && !keep(fields) {
			continue
		}
		out = append(out, net.JoinHostPort(fields["ip"], fields["port"]))
	}
	return out
}

// healthy reports whether an instance entry has none of the flags that make it
// unusable.
func healthy(fields map[string]string) bool {
	for f := range strings.SplitSeq(fields["flags"], ",") {
		switch f {
		case "s_down", "o_down", "disconnected":
			return false
		}
	}
	return true
}

// usableReplica reports whether a SENTINEL REPLICAS entry can serve reads.
func usableReplica(fields map[string]string) bool {
	return healthy(fields) && fields["master-link-status"] == "ok"
}

// Sentinels returns the Sentinel addresses the Monitor knows, the one that answered
// last first. It starts with Config.Sentinels and grows with the Sentinels they
// report (SENTINEL SENTINELS); configured addresses are never dropped.
func (m *Monitor) Sentinels() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.sentinels)
}

// prefer moves s to the front of the list: it answered last, so it is asked first.
func (m *Monitor) prefer(s string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if i := slices.Index(m.sentinels, s); i > 0 {
		m.sentinels = slices.Insert(slices.Delete(m.sentinels, i, i+1), 0, s)
	}
}

// learn adds the Sentinels that s reported.
func (m *Monitor) learn(s string, peers []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range peers {
		if len(m.sentinels) >= maxSentinels {
			return
		}
		if !slices.Contains(m.sentinels, p) {
			m.sentinels = append(m.sentinels, p)
		}
	}
}

// Replicas asks the Sentinels in turn for the master's replicas and returns the
// addresses of those that are up and in sync with their master (no s_down, o_down or
// disconnected flag, master-link-status ok). They are not checked here: check each
// connection with CheckReplica.
func (m *Monitor) Replicas(ctx context.Context) ([]string, error) {
	if m.ctx.Err() != nil {
		return nil, ErrClosed
	}
	var errs []error
	for _, s := range m.Sentinels() {
		if ctx.Err() != nil {
			errs = append(errs, context.Cause(ctx))
			break
		}
		addrs, err := m.askReplicas(ctx, s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return addrs, nil
	}
	return nil, fmt.Errorf("%w for master %q: %w", ErrNoSentinel, m.cfg.MasterName, errors.Join(errs...))
}

func (m *Monitor) askReplicas(ctx context.Context, s string) ([]string, error) {
	cn, err := conn.Dial(ctx, s, m.cfg.SentinelConn)
	if err != nil {
		return nil, fmt.Errorf("Sentinel %s: %w", s, err)
	}
	defer cn.Close()
	v, err := cn.Do(ctx, "SENTINEL", "REPLICAS", m.cfg.MasterName)
	if err != nil {
		return nil, fmt.Errorf("Sentinel %s: %w", s, err)
	}
	return instances(v, usableReplica), nil
}
