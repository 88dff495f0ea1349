package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/respire/respire"
)

// participant is one client, locker or reference in one scenario.
type participant struct {
	name      string
	respire   bool
	reference bool
	// run measures the scenario for about d.
	run func(ctx context.Context, d time.Duration) figures
}

// bench runs the selected scenarios against one server.
type bench struct {
	cfg      config
	ep       endpoint
	embedded bool
	stderr   io.Writer
	prog     *progress

	admin   *respire.Client // setup and cleanup
	data    []openedClient
	lockers []openedLocker
}

type openedClient struct {
	spec   clientSpec
	client dataClient
}

type openedLocker struct {
	spec   lockerSpec
	locker locker
}

// recorder records the measured windows as -cpuprofile and -trace ask.
func (b *bench) recorder() windowRecorder {
	return windowRecorder{cpuDir: b.cfg.cpuProfileDir, traceDir: b.cfg.traceDir, note: b.prog.note}
}

func (b *bench) selected(name string) bool { return slices.Contains(b.cfg.clients, name) }

func (b *bench) scenarioSelected(kind scenarioKind) bool {
	for _, sc := range b.selectedScenarios() {
		if sc.kind == kind {
			return true
		}
	}
	return false
}

func (b *bench) selectedScenarios() []*scenario {
	var out []*scenario
	for _, sc := range scenarios {
		if slices.Contains(b.cfg.scenarios, sc.name) {
			out = append(out, sc)
		}
	}
	return out
}

// open connects the admin client and every selected client and locker, and stores the
// values the scenarios read.
func (b *bench) open(ctx context.Context, rep *report) error {
	admin, err := respire.NewClient(ctx, respire.Options{Addrs: b.ep.addrs, Cluster: b.ep.cluster})
	if err != nil {
		return fmt.Errorf("respbench: connect to %s: %w", b.ep, err)
	}
	b.admin = admin
	if s, err := b.info(ctx, "server"); err == nil {
		rep.Server.Version = infoField(s, "redis_version")
	}
	for _, kv := range [][2]string{{getKey, value16}, {benchKey, value16}} {
		if _, err := admin.Do(ctx, "SET", kv[0], kv[1]); err != nil {
			return fmt.Errorf("respbench: store %s: %w", kv[0], err)
		}
	}
	if b.scenarioSelected(kindData) || b.cfg.sweep {
		for _, spec := range clientSpecs {
			if spec.open == nil || !b.selected(spec.name) {
				continue
			}
			c, err := spec.open(ctx, b.ep)
			if err != nil {
				return fmt.Errorf("respbench: open %s: %w", spec.name, err)
			}
			b.data = append(b.data, openedClient{spec, c})
		}
	}
	if b.scenarioSelected(kindLock) {
		for _, spec := range lockerSpecs() {
			if !b.selected(spec.name) {
				continue
			}
			l, err := spec.open(ctx, b.ep, lockerOptions{retry: b.cfg.lockRetry})
			if err != nil {
				return fmt.Errorf("respbench: open %s: %w", spec.name, err)
			}
			b.lockers = append(b.lockers, openedLocker{spec, l})
			rep.Lockers = append(rep.Lockers, lockerNote{Name: spec.name, Retry: strings.ReplaceAll(spec.retry, "-lock-retry", b.cfg.lockRetry.String())})
		}
	}
	if b.scenarioSelected(kindRedlock) {
		for _, spec := range b.redlockSpecs() {
			rep.Lockers = append(rep.Lockers, lockerNote{Name: spec.name, Retry: spec.retry})
		}
	}
	return nil
}

// close closes every client and deletes the keys respbench wrote.
func (b *bench) close() {
	for _, c := range b.data {
		c.client.close()
	}
	for _, l := range b.lockers {
		l.locker.close()
	}
	if b.admin != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		b.cleanup(ctx)
		b.admin.Close()
	}
}

// cleanup deletes what respbench stored, which matters on a server given with -addr.
func (b *bench) cleanup(ctx context.Context) {
	if b.embedded {
		return
	}
	b.admin.Do(ctx, "DEL", benchKey)
	for key, err := range b.admin.Scan(ctx, respire.ScanOptions{Match: keyPrefix + "*", Count: 1000}) {
		if err != nil {
			return
		}
		b.admin.Do(ctx, "DEL", key)
	}
}

// participants returns who runs sc, and why sc is skipped if it is.
func (b *bench) participants(ctx context.Context, sc *scenario) (ps []participant, closeAll func(), skip string, err error) {
	closeAll = func() {}
	goLoad := func(t target, name string, respire, reference bool) participant {
		if sc.prepare != nil {
			t.prepareErr = sc.prepare(ctx, t)
		}
		return participant{name: name, respire: respire, reference: reference, run: func(ctx context.Context, d time.Duration) figures {
			l := sc.makeLoad(sc, t)
			s := measure(ctx, l, d)
			f := s.figures()
			if s.firstErr != nil {
				f.FirstError = s.firstErr.Error()
			}
			if l.finish != nil {
				l.finish(&f)
			}
			return f
		}}
	}
	switch sc.kind {
	case kindData:
		for _, c := range b.data {
			if !c.spec.takesPart(sc) {
				continue
			}
			ps = append(ps, goLoad(target{name: c.spec.name, data: c.client}, c.spec.name, c.spec.respire, false))
		}
		if sc.benchArgs != nil && b.selected(referenceName) && b.ep.cluster {
			// redis-benchmark --cluster measures mostly its own start-up at these sizes
			// and gives up on pipelines; it is no reference there.
			b.prog.note("respbench: %s: no redis-benchmark reference on a cluster", sc.name)
		}
		if sc.benchArgs != nil && b.selected(referenceName) && !b.ep.cluster {
			ref, err := newReferenceRunner(b.ep.addrs[0], sc.benchArgs)
			if errors.Is(err, errNoBenchmarkBinary) {
				b.prog.note("respbench: %s: no redis-benchmark reference: install it with: %s", sc.name, installHint)
				break
			}
			if err != nil {
				return nil, closeAll, "", err
			}
			ps = append(ps, participant{name: referenceName, reference: true, run: func(ctx context.Context, d time.Duration) figures {
				f, err := ref.run(ctx, d)
				if err != nil && ctx.Err() == nil {
					f.Errors, f.FirstError = 1, err.Error()
				}
				return f
			}})
		}
	case kindLock:
		for _, l := range b.lockers {
			if l.spec.reference && !sc.limits || !l.spec.takesPart(sc) {
				continue
			}
			ps = append(ps, goLoad(target{name: l.spec.name, lock: l.locker}, l.spec.name, l.spec.respire, l.spec.reference))
		}
	case kindSemaphore:
		var opened []semaphore
		closeAll = func() {
			for _, s := range opened {
				s.close()
			}
		}
		for _, spec := range semaphoreSpecs {
			if !b.selected(spec.name) {
				continue
			}
			s, err := spec.open(ctx, b.ep)
			if err != nil {
				return nil, closeAll, "", fmt.Errorf("respbench: open %s: %w", spec.name, err)
			}
			opened = append(opened, s)
			ps = append(ps, goLoad(target{name: spec.name, sem: s}, spec.name, spec.respire, false))
		}
	case kindRedlock:
		specs := b.redlockSpecs()
		if len(specs) == 0 {
			break
		}
		// The group's servers live for this scenario alone.
		servers, err := startServers(ctx, b.cfg.serverBin, redlockNodes)
		if errors.Is(err, errNoServerBinary) {
			return nil, closeAll, "redis-server is not installed (the scenario starts its own three): " + installHint, nil
		}
		if err != nil {
			return nil, closeAll, "", fmt.Errorf("respbench: %s: %w", sc.name, err)
		}
		var opened []locker
		closeAll = func() {
			for _, l := range opened {
				l.close()
			}
			servers.stop()
		}
		group := endpoint{addrs: servers.addrs()}
		b.prog.note("respbench: %s: three independent servers at %s", sc.name, group)
		for _, spec := range specs {
			l, err := spec.open(ctx, group, lockerOptions{retry: b.cfg.lockRetry})
			if err != nil {
				return nil, closeAll, "", fmt.Errorf("respbench: open %s: %w", spec.name, err)
			}
			opened = append(opened, l)
			ps = append(ps, goLoad(target{name: spec.name, lock: l}, spec.name, spec.respire, false))
		}
	case kindCache:
		if b.ep.cluster {
			for _, spec := range clientSpecs {
				if spec.openCached != nil && spec.cacheNotOnCluster && b.selected(spec.name) {
					b.prog.note("respbench: %s: %s's client-side cache is not measured on a cluster", sc.name, spec.name)
				}
			}
		}
		var opened []cachedClient
		closeAll = func() {
			for _, c := range opened {
				c.close()
			}
		}
		for _, spec := range b.cachedSpecs() {
			c, err := spec.openCached(ctx, b.ep)
			if err != nil {
				return nil, closeAll, "", fmt.Errorf("respbench: open %s with its cache: %w", spec.name, err)
			}
			opened = append(opened, c)
			ps = append(ps, goLoad(target{name: spec.name, cached: c}, spec.name, spec.respire, spec.reference))
		}
	}
	if len(ps) == 0 {
		skip = "no selected client takes part"
	}
	return ps, closeAll, skip, nil
}

// cachedSpecs returns the selected client configurations that take part in the cache
// scenarios: those with a client-side cache that is measured on this endpoint.
func (b *bench) cachedSpecs() []clientSpec {
	var out []clientSpec
	for _, spec := range append(clientSpecs[:len(clientSpecs):len(clientSpecs)], mapLimitSpec) {
		if spec.openCached == nil || !b.selected(spec.name) || (b.ep.cluster && spec.cacheNotOnCluster) {
			continue
		}
		out = append(out, spec)
	}
	return out
}

// redlockSpecs returns the selected Redlock implementations.
func (b *bench) redlockSpecs() []lockerSpec {
	var out []lockerSpec
	for _, spec := range redlockSpecs {
		if b.selected(spec.name) {
			out = append(out, spec)
		}
	}
	return out
}

// plannedSteps counts the measurements the run will make, for the progress bar.
func (b *bench) plannedSteps() int {
	steps := 0
	for _, sc := range b.selectedScenarios() {
		n := 0
		switch sc.kind {
		case kindData:
			for _, c := range b.data {
				if c.spec.takesPart(sc) {
					n++
				}
			}
			if sc.benchArgs != nil && b.selected(referenceName) && !b.ep.cluster {
				n++
			}
		case kindLock:
			for _, l := range b.lockers {
				if (sc.limits || !l.spec.reference) && l.spec.takesPart(sc) {
					n++
				}
			}
		case kindCache:
			n = len(b.cachedSpecs())
		case kindSemaphore:
			for _, spec := range semaphoreSpecs {
				if b.selected(spec.name) {
					n++
				}
			}
		case kindRedlock:
			n = len(b.redlockSpecs())
		}
		steps += n * b.cfg.rounds
	}
	if b.cfg.memory {
		steps += len(memoryClients)
	}
	return steps + b.sweepSteps()
}

// run measures every selected scenario in interleaved rounds: every participant runs a
// scenario's round r before any runs round r+1, and the order rotates between rounds so
// no participant always runs first, right after a warm server or another's load.
func (b *bench) run(ctx context.Context, rep *report) error {
	b.prog = newProgress(b.stderr, b.plannedSteps(), b.cfg.warmup+b.cfg.duration)
	b.prog.start()
	defer b.prog.finish()
	for _, sc := range b.selectedScenarios() {
		res, err := b.runScenario(ctx, sc)
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rep.Scenarios = append(rep.Scenarios, res)
	}
	if b.cfg.sweep {
		pts, err := b.runSweep(ctx)
		if err != nil {
			return err
		}
		rep.Sweep = pts
		rep.SweepDuration, rep.SweepRounds = b.cfg.sweepDuration.String(), b.cfg.sweepRounds
	}
	if b.cfg.memory {
		ms, err := b.runMemory(ctx)
		if err != nil {
			return err
		}
		rep.Memory = ms
	}
	return nil
}

func (b *bench) runScenario(ctx context.Context, sc *scenario) (scenarioResult, error) {
	res := scenarioResult{
		Name: sc.name, Kind: sc.kind.String(), Title: sc.title, Latency: sc.latency,
		Goroutines: sc.goroutines, OpsPerCall: sc.opsPerCall,
		Capacity: sc.capacity, Peerless: sc.peerless,
	}
	ps, closeAll, skip, err := b.participants(ctx, sc)
	defer closeAll()
	if err != nil {
		return res, err
	}
	if skip != "" {
		res.Skipped = skip
		b.prog.note("respbench: %s: skipped: %s", sc.name, skip)
		return res, nil
	}
	rounds := make([][]figures, len(ps))
	for r := range b.cfg.rounds {
		b.prog.milestone("respbench: %s round %d/%d", sc.name, r+1, b.cfg.rounds)
		for k := range ps {
			i := (k + r) % len(ps)
			p := ps[i]
			b.prog.step(fmt.Sprintf("%s r%d/%d %s", sc.name, r+1, b.cfg.rounds, p.name))
			if b.cfg.warmup > 0 {
				p.run(ctx, b.cfg.warmup)
			}
			srvBefore, srvOK := b.serverCPU(ctx, sc)
			stopRecording := b.recorder().start(sc.name, p.name, r+1)
			f := p.run(ctx, b.cfg.duration)
			stopRecording()
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			if srvAfter, ok := b.serverCPU(ctx, sc); ok && srvOK && f.Ops > 0 {
				f.ServerCPUPerOp = ptr(float64((srvAfter - srvBefore).Nanoseconds()) / float64(f.Ops))
			}
			rounds[i] = append(rounds[i], f)
		}
	}
	for i, p := range ps {
		res.Results = append(res.Results, participantResult{
			Client: p.name, Respire: p.respire, Reference: p.reference,
			Rounds: rounds[i], Median: medianFigures(rounds[i]),
		})
	}
	res.Ratio = respireRatio(res.Results)
	res.Limits = limitRatios(res.Results)
	if sc.limit != "" && slices.ContainsFunc(res.Results, func(r participantResult) bool { return r.Client == sc.limit }) {
		res.Limit = sc.limit
	}
	return res, nil
}

// info returns one section of INFO from the server respbench addresses; on a cluster,
// from the node that serves getKey, since the client refuses INFO there (its replies
// are per node).
func (b *bench) info(ctx context.Context, section string) (string, error) {
	cn, release, err := b.admin.Dedicated(ctx, getKey)
	if err != nil {
		return "", err
	}
	v, err := cn.Do(ctx, "INFO", section)
	release(err == nil)
	if err != nil {
		return "", err
	}
	return v.Text()
}

// serverCPU returns the CPU time the server has used (INFO cpu), where the scenario
// runs against the one server respbench addresses: not on a cluster, not for Redlock's
// own servers, not for the cache scenario, whose hits never reach it.
func (b *bench) serverCPU(ctx context.Context, sc *scenario) (time.Duration, bool) {
	if b.ep.cluster || sc.kind == kindRedlock || sc.kind == kindCache {
		return 0, false
	}
	s, err := b.info(ctx, "cpu")
	if err != nil {
		return 0, false
	}
	var total float64
	for _, field := range []string{"used_cpu_sys", "used_cpu_user"} {
		x, err := strconv.ParseFloat(infoField(s, field), 64)
		if err != nil {
			return 0, false
		}
		total += x
	}
	return time.Duration(total * float64(time.Second)), true
}

// newReport fills in what is known before anything runs.
func newReport(cfg config, ep endpoint, embedded bool) *report {
	return &report{
		Started:    time.Now().UTC(),
		Server:     serverInfo{Addr: ep.String(), Embedded: embedded, Cluster: ep.cluster},
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		NumCPU:     runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Duration:   cfg.duration.String(),
		Warmup:     cfg.warmup.String(),
		Rounds:     cfg.rounds,
		LockRetry:  cfg.lockRetry.String(),
		Clients:    cfg.clients,
		Notes:      configurationNotes,
	}
}

// configurationNotes say how each configuration is set up, for the report.
var configurationNotes = []string{
	"respire: respire.NewClient with only Addrs (auto-pipelining, RESP3)",
	"respire-typed: the same client through package cmds's typed commands (cmds.Get(key).Do, a cmds.Pipeline of typed GETs whose every Reply is read), in get-par, pipeline and pipeline-spread only",
	"respire-observed: the same with Options.Observer a respireotel Observer: a span per command (AlwaysSample, the SDK's batching processor, an exporter that drops the spans) and db.client.operation.duration (the SDK's aggregation, a manual reader never collected)",
	"go-redis: redis.NewClient with only Addr (pool of 10 x GOMAXPROCS, RESP3)",
	"go-redis-autopipe: the same client's AutoPipeline() blocking face, DefaultBlockingAutoPipelineOptions (ordered, MaxBatchSize 300); typed Get/Set, its Pipeline() for pipelines",
	"rueidis: rueidis.NewClient with only InitAddress",
	"rueidis-flush20us: MaxFlushDelay 20µs, as its documentation suggests",
	"cached-get: respire with ClientSideCache MaxEntries 10,000, read with DoCached (client TTL 1m); go-redis with Protocol 3 and ClientSideCacheConfig MaxEntries 10,000, its typed Get (not on a cluster); rueidis with its default cache (CacheSizeEachConn 128 MiB), read with DoCache (client TTL 1m)",
	"redis-benchmark: the server-side reference, -n sized from its latest rate and run again until a run lasts the whole window (its rate grows with run length); its p50/p99 are its own (per request), its CPU is not this process's",
	"semaphore: respire-semaphore is coordination.Semaphore(key, 4) over a default Respire client, permits of 10s; a cycle is one TryAcquire and, when it took a permit, its Release; the harness counts the holders between the two",
	"redlock: three independent redis-servers that respbench starts for the scenario alone (loopback, free ports, whatever -addr and -cluster say); how each Redlock is set up is under lock waiting",
	"locks: respire-lock is package lock over a default Respire client; redislock and redsync-goredis run over a default go-redis client, redsync-rueidis over rueidiscompat on a default rueidis client; rueidislock builds its own rueidis client",
}

// infoField returns a field of an INFO reply.
func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
