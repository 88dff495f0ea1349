package testserver

import (
	"strconv"
	"strings"
	"testing"
)

// CommandStat reads one field (calls, failed_calls, rejected_calls) of cmdstat_<cmd>
// in INFO commandstats, 0 when the server has not run cmd: the server's own count,
// which tests read as proof of whether, and how often, a command reached it. cmd is
// as INFO names it: lower case, a subcommand after "|" ("script|load").
func (s *Server) CommandStat(t testing.TB, cmd, field string) int {
	t.Helper()
	for line := range strings.Lines(s.Do(t, "INFO", "commandstats")) {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_"+cmd+":")
		if !ok {
			continue
		}
		for kv := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(kv, field+"="); ok {
				n, _ := strconv.Atoi(v)
				return n
			}
		}
	}
	return 0
}

// Calls is CommandStat's calls field: how many times the server ran cmd.
func (s *Server) Calls(t testing.TB, cmd string) int {
	t.Helper()
	return s.CommandStat(t, cmd, "calls")
}
