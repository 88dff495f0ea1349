package testserver

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePortsAreDistinctAndBindable(t *testing.T) {
	ports := FreePorts(t, 50)
	if len(ports) != 50 {
		t.Fatalf("FreePorts(50) returned %d ports", len(ports))
	}
	seen := make(map[int]bool)
	for _, p := range append(ports, FreePort(t), FreePort(t)) {
		if seen[p] {
			t.Fatalf("port %d handed out twice", p)
		}
		seen[p] = true
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		l.Close()
	}
}
