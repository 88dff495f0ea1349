package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/respire/respire/conn"
	"github.com/respire/respire/resp"
)

// The Sentinel event channels a Monitor listens to. +switch-master announces the new
// master at the end of a failover: "<name> <old-ip> <old-port> <new-ip> <new-port>".
// +promoted-slave comes earlier, once the chosen replica answers as a master, while
// the other replicas are still being reconfigured (which can take a while):
// "slave <ip>:<port> <ip> <port> @ <name> <old-ip> <old-port>". From then on the
// failover is not aborted, and the old master's writes are lost: following at once
// loses fewer.
const (
	switchChannel   = "+switch-master"
	promotedChannel = "+promoted-slave"
)

// errSubscribeUnconfirmed is the cause when a Sentinel did not confirm SUBSCRIBE.
var errSubscribeUnconfirmed = errors.New("sentinel: SUBSCRIBE not confirmed")

// watch keeps one subscription to the event channels alive, moving to the next
// Sentinel whenever the current one fails, until Close.
func (m *Monitor) watch() {
	defer m.loops.Done()
	backoff := minBackoff
	for next := 0; ; next++ {
		sentinels := m.Sentinels()
		began := time.Now()
		subscribed, _ := m.subscribe(sentinels[next%len(sentinels)])
		if m.ctx.Err() != nil {
			return
		}
		if subscribed && time.Since(began) >= pollEvery {
			// It worked for a while: move straight on to the next Sentinel.
			backoff = minBackoff
			continue
		}
		t := time.NewTimer(backoff)
		select {
		case <-m.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// subscribe subscribes to the event channels on Sentinel s and serves their messages,
// asking s for the master every pollEvery, until s fails or the Monitor closes.
// subscribed reports whether the subscription was confirmed.
func (m *Monitor) subscribe(s string) (subscribed bool, err error) {
	events := make(chan event, 16)
	confirmed := make(chan struct{}, 1)
	opts := m.cfg.SentinelConn
	opts.ReadTimeout = -1 // messages come when they come; the polls check the link
	opts.PushHandler = func(v resp.Value) {
		kind, channel, payload := pushMessage(v)
		switch kind {
		case "subscribe":
			select {
			case confirmed <- struct{}{}:
			default:
			}
		case "message":
			select {
			case events <- event{channel, payload}:
			default:
				// Full: the recheck forced below finds the master anyway.
				m.Recheck()
			}
		}
	}
	cn, err := conn.Dial(m.ctx, s, opts)
	if err != nil {
		return false, err
	}
	defer cn.Close()
	cn.SetPubSubMode(true)
	if err := cn.Send(m.ctx, "SUBSCRIBE", switchChannel, promotedChannel); err != nil {
		return false, err
	}
	wait := time.NewTimer(orDefault(m.cfg.SentinelConn.ReadTimeout, 3*time.Second))
	select {
	case <-confirmed:
		wait.Stop()
	case <-cn.Done():
		wait.Stop()
		return false, cn.Err()
	case <-m.ctx.Done():
		wait.Stop()
		return false, m.ctx.Err()
	case <-wait.C:
		return false, fmt.Errorf("Sentinel %s: %w", s, errSubscribeUnconfirmed)
	}
	// Under RESP2 a subscribed connection can only listen: ask on a second one.
	query := cn
	if cn.Protocol() < 3 {
		q, err := conn.Dial(m.ctx, s, m.cfg.SentinelConn)
		if err != nil {
			return true, err
		}
		defer q.Close()
		query = q
	}
	// A switch announced while no subscription was active would be missed: look now.
	m.Recheck()
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return true, nil
		case <-cn.Done():
			return true, cn.Err()
		case e := <-events:
			if addr, ok := m.newMaster(e); ok {
				m.announce(addr)
			}
		case <-query.Done():
			return true, query.Err()
		case <-poll.C:
			// Asking proves the Sentinel still answers, and catches a switch whose
			// event was missed.
			ctx, cancel := context.WithTimeout(m.ctx, orDefault(m.cfg.SentinelConn.ReadTimeout, 3*time.Second))
			v, err := query.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", m.cfg.MasterName)
			cancel()
			if err != nil {
				return true, err
			}
			if addr, err := hostPort(v); err == nil && addr != m.Master() {
				m.announce(addr)
			}
			if m.cfg.OnReplicas != nil {
				// The replicas of a new master become usable one by one, after the
				// switch was announced: notice when their set changes.
				ctx, cancel := context.WithTimeout(m.ctx, orDefault(m.cfg.SentinelConn.ReadTimeout, 3*time.Second))
				v, err := query.Do(ctx, "SENTINEL", "REPLICAS", m.cfg.MasterName)
				cancel()
				if err != nil {
					return true, err
				}
				if m.replicasChanged(instances(v, usableReplica)) {
					m.Recheck() // reported from the Monitor's goroutine, in order
				}
			}
		}
	}
}

// event is a message from a Sentinel event channel.
type event struct{ channel, payload string }

// pushMessage returns the kind of a pub/sub frame and, for a message, its channel and
// payload.
func pushMessage(v resp.Value) (kind, channel, payload string) {
	elems, err := v.Array()
	if err != nil || len(elems) < 3 {
		return "", "", ""
	}
	kind, _ = elems[0].Text()
	if kind == "message" {
		channel, _ = elems[1].Text()
		payload, _ = elems[2].Text()
	}
	return kind, channel, payload
}

// newMaster reads the address of the new master from an event about the Monitor's
// master.
func (m *Monitor) newMaster(e event) (string, bool) {
	f := strings.Fields(e.payload)
	switch {
	case e.channel == switchChannel && len(f) == 5 && f[0] == m.cfg.MasterName:
		return net.JoinHostPort(f[3], f[4]), true
	case e.channel == promotedChannel && len(f) == 8 && f[0] == "slave" && f[4] == "@" && f[5] == m.cfg.MasterName:
		return net.JoinHostPort(f[2], f[3]), true
	}
	return "", false
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
