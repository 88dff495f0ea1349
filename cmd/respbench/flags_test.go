package main

import (
	"errors"
	"io"
	"slices"
	"testing"
	"time"
)

func TestSelectNames(t *testing.T) {
	all := []string{"respire", "go-redis", "rueidis", "redis-benchmark"}
	for _, tc := range []struct {
		filter  string
		want    []string
		wantErr bool
	}{
		{"", all, false},
		{"  ", all, false},
		{"rueidis,respire", []string{"respire", "rueidis"}, false}, // the order of all, not of the filter
		{" go-redis , rueidis ,", []string{"go-redis", "rueidis"}, false},
		{"respire,respire", []string{"respire"}, false},
		{"redis", nil, true}, // names match whole
		{"respire,nope", nil, true},
		{",", nil, true},
	} {
		got, err := selectNames(all, tc.filter)
		if (err != nil) != tc.wantErr {
			t.Errorf("selectNames(%q) error = %v, want error %v", tc.filter, err, tc.wantErr)
			continue
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("selectNames(%q) = %v, want %v", tc.filter, got, tc.want)
		}
	}
}

func TestParseFlags(t *testing.T) {
	parse := func(args ...string) (config, error) {
		return parseFlags(args, io.Discard, participantNames(), scenarioNames())
	}
	cfg, err := parse()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != 2*time.Second || cfg.warmup != 500*time.Millisecond || cfg.rounds != 5 {
		t.Errorf("defaults = %v, %v, %d rounds", cfg.duration, cfg.warmup, cfg.rounds)
	}
	if !slices.Equal(cfg.clients, participantNames()) || !slices.Equal(cfg.scenarios, scenarioNames()) {
		t.Errorf("default selection = %v / %v, want everything", cfg.clients, cfg.scenarios)
	}

	cfg, err = parse("-quick", "-warmup", "1ms", "-scenarios", "lock,get-seq", "-clients", "respire,redislock")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.duration != quickDuration || cfg.warmup != time.Millisecond {
		t.Errorf("-quick -warmup 1ms = %v, %v; want %v and the warm-up given", cfg.duration, cfg.warmup, quickDuration)
	}
	if !slices.Equal(cfg.scenarios, []string{"get-seq", "lock"}) || !slices.Equal(cfg.clients, []string{"respire", "redislock"}) {
		t.Errorf("filters = %v / %v", cfg.scenarios, cfg.clients)
	}

	cfg, err = parse("-server", "/opt/redis-8/redis-server")
	if err != nil || cfg.serverBin != "/opt/redis-8/redis-server" {
		t.Errorf("-server = %q, %v; want the path", cfg.serverBin, err)
	}

	cfg, err = parse("-cluster")
	if err != nil || !cfg.cluster {
		t.Errorf("-cluster = %v, %v; want accepted", cfg.cluster, err)
	}

	for _, args := range [][]string{
		{"-rounds", "0"},
		{"-duration", "0s"},
		{"-chart", "out.jpg"},
		{"-clients", "jedis"},
		{"-scenarios", "mget"},
		{"-addr", "a:1,b:2"},
		{"-server", "/usr/bin/redis-server", "-addr", "a:1"},
		{"extra"},
	} {
		if _, err := parse(args...); !errors.Is(err, errUsage) {
			t.Errorf("%v: error %v, want a usage error", args, err)
		}
	}
}
