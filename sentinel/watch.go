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
	sub, err := m.dialSubscriber(s)
	if err != nil {
		return false, err
	}
	defer sub.cn.Close()
	if err := sub.confirm(m, s); err != nil {
		return false, err
	}
	// Under RESP2 a subscribed connection can only listen: ask on a second one.
	query := sub.cn
	if sub.cn.Protocol() < 3 {
		q, err := conn.Dial(m.ctx, s, m.cfg.SentinelConn)
		if err != nil {
			return true, err
		}
		defer q.Close()
		query = q
	}
	// A switch announced while no subscription was active would be missed: look now.
	m.Recheck()
	return true, m.serve(sub, query)
}

// subscriber is a connection subscribed to the event channels, with what its push
// handler hands over: the events, and the confirmation of SUBSCRIBE.
type subscriber struct {
	cn        *conn.Conn
	events    chan event
	confirmed chan struct{}
}

// dialSubscriber connects to Sentinel s and sends SUBSCRIBE.
func (m *Monitor) dialSubscriber(s string) (*subscriber, error) {
	sub := &subscriber{events: make(chan event, 16), confirmed: make(chan struct{}, 1)}
	opts := m.cfg.SentinelConn
	opts.ReadTimeout = -1 // messages come when they come; the polls check the link
	opts.PushHandler = func(v resp.Value) {
		kind, channel, payload := pushMessage(v)
		switch kind {
		case "subscribe":
			select {
			case sub.confirmed <- struct{}{}:
			default:
			}
		case "message":
			select {
			case sub.events <- event{channel, payload}:
			default:
				// Full: the recheck forced below finds the master anyway.
				m.Recheck()
			}
		}
	}
	cn, err := conn.Dial(m.ctx, s, opts)
	if err != nil {
		return nil, err
	}
	cn.SetPubSubMode(true)
	if err := cn.Send(m.ctx, "SUBSCRIBE", switchChannel, promotedChannel); err != nil {
		cn.Close()
		return nil, err
	}
	sub.cn = cn
	return sub, nil
}

// confirm waits for Sentinel s to confirm the subscription, as long as a reply may
// take.
func (sub *subscriber) confirm(m *Monitor, s string) error {
	wait := time.NewTimer(m.replyTimeout())
	defer wait.Stop()
	select {
	case <-sub.confirmed:
		return nil
	case <-sub.cn.Done():
		return sub.cn.Err()
	case <-m.ctx.Done():
		return m.ctx.Err()
	case <-wait.C:
		return fmt.Errorf("Sentinel %s: %w", s, errSubscribeUnconfirmed)
	}
}

// serve acts on the subscription's events and polls the Sentinel on query every
// pollEvery, until either connection fails (its error) or the Monitor closes (nil).
func (m *Monitor) serve(sub *subscriber, query *conn.Conn) error {
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return nil
		case <-sub.cn.Done():
			return sub.cn.Err()
		case e := <-sub.events:
			if addr, ok := m.newMaster(e); ok {
				m.announce(addr)
			}
		case <-query.Done():
			return query.Err()
		case <-poll.C:
			if err := m.poll(query); err != nil {
				return err
			}
		}
	}
}

// poll asks the Sentinel on query for the master, which proves it still answers and
// catches a switch whose event was missed, and for the replicas when they are
// followed.
func (m *Monitor) poll(query *conn.Conn) error {
	v, err := m.askOn(query, "GET-MASTER-ADDR-BY-NAME")
	if err != nil {
		return err
	}
	if addr, err := hostPort(v); err == nil && addr != m.Master() {
		m.announce(addr)
	}
	if m.cfg.OnReplicas == nil {
		return nil
	}
	// The replicas of a new master become usable one by one, after the switch was
	// announced: notice when their set changes.
	if v, err = m.askOn(query, "REPLICAS"); err != nil {
		return err
	}
	if m.replicasChanged(instances(v, usableReplica)) {
		m.Recheck() // reported from the Monitor's goroutine, in order
	}
	return nil
}

// askOn sends SENTINEL sub for the master's name on query, as long as a reply may
// take.
func (m *Monitor) askOn(query *conn.Conn, sub string) (resp.Value, error) {
	ctx, cancel := context.WithTimeout(m.ctx, m.replyTimeout())
	defer cancel()
	return query.Do(ctx, "SENTINEL", sub, m.cfg.MasterName)
}

// replyTimeout is how long a Sentinel's reply may take.
func (m *Monitor) replyTimeout() time.Duration {
	return orDefault(m.cfg.SentinelConn.ReadTimeout, 3*time.Second)
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
