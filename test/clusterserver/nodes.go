package clusterserver

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// entry is one line of CLUSTER NODES:
// <id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slot>...
type entry struct {
	id     string
	addr   string
	flags  []string
	master string // the master's ID for a replica, "-" for a master
	epoch  string // the node's config epoch, as this view knows it
	slots  [][2]int
}

func (e entry) has(flag string) bool { return slices.Contains(e.flags, flag) }

func (e entry) serves(slot int) bool {
	for _, r := range e.slots {
		if r[0] <= slot && slot <= r[1] {
			return true
		}
	}
	return false
}

// view returns the node's CLUSTER NODES, parsed.
func (n *Node) view(ctx context.Context) ([]entry, error) {
	text, err := n.DoErr(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	return parseNodes(text)
}

func parseNodes(text string) ([]entry, error) {
	var out []entry
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 8 {
			return nil, fmt.Errorf("clusterserver: CLUSTER NODES line %q", line)
		}
		e := entry{id: f[0], flags: strings.Split(f[2], ","), master: f[3], epoch: f[6]}
		e.addr, _, _ = strings.Cut(f[1], "@")
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue // a slot being migrated or imported: still its owner's
			}
			first, last, isRange := strings.Cut(s, "-")
			a, err := strconv.Atoi(first)
			if err != nil {
				return nil, fmt.Errorf("clusterserver: slot %q in %q", s, line)
			}
			b := a
			if isRange {
				if b, err = strconv.Atoi(last); err != nil {
					return nil, fmt.Errorf("clusterserver: slot %q in %q", s, line)
				}
			}
			e.slots = append(e.slots, [2]int{a, b})
		}
		out = append(out, e)
	}
	return out, nil
}

// summary renders what all nodes must agree on: the slots and config epoch of every
// master and the master of every replica that is not failed.
//
// The epochs matter to what comes next. A node that imports a slot takes a new epoch
// without consensus (the greatest it knows, plus one); if the next migration begins
// before every node knows the last epoch taken, two masters can take the same one,
// each claiming slots with it, and gossip cannot settle who owns what: the cluster
// then disagrees for good, and writes land on both sides (seen in about half the runs
// of live resharding before the epochs were compared).
func summary(view []entry) string {
	var lines []string
	for _, e := range view {
		failed := e.has("fail") || e.has("fail?")
		switch {
		case e.has("master") && len(e.slots) > 0:
			lines = append(lines, fmt.Sprintf("master %s epoch %s %v", e.id, e.epoch, e.slots))
		case e.has("slave") && !failed:
			lines = append(lines, fmt.Sprintf("replica %s of %s", e.id, e.master))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}
