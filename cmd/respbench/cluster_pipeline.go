package main

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/redis/rueidis"
	"github.com/respire/respire/cluster"
	"github.com/respire/respire/cmds"
)

// The pipeline scenario sends its 100 GETs for one key, so on a cluster they all go
// to one node. pipeline-spread reads 100 keys spread evenly over the slot space, so
// on a cluster every master serves its share of each pipeline and a client has to
// split the batch by node and put the replies back in order.
func init() {
	at := slices.IndexFunc(scenarios, func(s *scenario) bool { return s.name == "pipeline" })
	scenarios = slices.Insert(scenarios, at+1, &scenario{
		name:    "pipeline-spread",
		title:   "explicit pipeline of 100 GETs of keys spread over every slot range, 1 goroutine (ops = commands)",
		latency: "per 100-GET pipeline", kind: kindData, goroutines: 1, opsPerCall: pipelineDepth,
		prepare: storeSpreadKeys, makeLoad: spreadPipelineLoad,
	})
}

// spreadKeys are the keys of pipeline-spread: key i hashes to slot i×16384/100, so
// whatever the cluster's split of the slots, each master gets about its share.
var spreadKeys = func() []string {
	keys := make([]string, pipelineDepth)
	for i := range keys {
		want := i * cluster.SlotCount / len(keys)
		for n := 0; ; n++ {
			k := keyPrefix + "spread:" + strconv.Itoa(n)
			if cluster.Slot(k) == want {
				keys[i] = k
				break
			}
		}
	}
	return keys
}()

// spreadStoreTimeout bounds the SETs that store the keys.
const spreadStoreTimeout = 10 * time.Second

// errNoKeysPipeline is a data client that cannot pipeline several keys.
var errNoKeysPipeline = errors.New("respbench: the client has no pipeline of several keys")

// keysPipeliner sends one GET per key as one explicit pipeline. Every data client
// implements it, the way its documentation shows for several keys.
type keysPipeliner interface {
	getPipelineKeys(ctx context.Context, keys []string) error
}

// storeSpreadKeys stores the keys once per participant, through its own client, so that
// every GET reads a 16-byte value as the pipeline scenario's do.
func storeSpreadKeys(ctx context.Context, t target) error {
	if _, ok := t.data.(keysPipeliner); !ok {
		return errNoKeysPipeline
	}
	ctx, cancel := context.WithTimeout(ctx, spreadStoreTimeout)
	defer cancel()
	for _, k := range spreadKeys {
		if err := t.data.set(ctx, k, value16); err != nil {
			return err
		}
	}
	return nil
}

func spreadPipelineLoad(s *scenario, t target) load {
	kp, _ := t.data.(keysPipeliner)
	return load{goroutines: s.goroutines, newWorker: func(int) workerFunc {
		return timed(pipelineDepth, func(ctx context.Context) error {
			if t.prepareErr != nil {
				return t.prepareErr
			}
			return kp.getPipelineKeys(ctx, spreadKeys)
		})
	}}
}

func (r respireClient) getPipelineKeys(ctx context.Context, keys []string) error {
	p := r.c.Pipeline()
	for _, k := range keys {
		p.Do("GET", k)
	}
	return execPipeline(ctx, p)
}

func (r respireTypedClient) getPipelineKeys(ctx context.Context, keys []string) error {
	p := cmds.NewPipeline(r.c)
	replies := make([]cmds.Reply[string], len(keys))
	for i, k := range keys {
		replies[i] = cmds.Get(k).In(p)
	}
	return execTyped(ctx, p, replies)
}

func (g *goRedisClient) getPipelineKeys(ctx context.Context, keys []string) error {
	pipe := g.cmds.Pipeline()
	for _, k := range keys {
		pipe.Get(ctx, k)
	}
	_, err := pipe.Exec(ctx)
	return err
}

func (r rueidisClient) getPipelineKeys(ctx context.Context, keys []string) error {
	cmds := make(rueidis.Commands, len(keys))
	for i, k := range keys {
		cmds[i] = r.c.B().Get().Key(k).Build()
	}
	for _, res := range r.c.DoMulti(ctx, cmds...) {
		if err := res.Error(); err != nil {
			return err
		}
	}
	return nil
}
