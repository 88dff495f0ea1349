package testserver

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// handedOut remembers every port FreePort and FreePorts returned in this test
// binary, so that parallel tests never get the same one even after the
// kernel has released it.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: make(map[int]bool)}

// maxPortTries bounds the listens FreePorts makes before giving up.
const maxPortTries = 1000

// FreePort returns a loopback TCP port that was free a moment ago and that
// no other call in this test binary has returned. Someone else may still take
// it before the caller binds it; [Start] retries on that race, and other
// harnesses should too.
func FreePort(t testing.TB) int {
	t.Helper()
	ports := FreePorts(t, 1)
	if len(ports) == 0 {
		return 0 // only when t.Fatalf did not stop the test
	}
	return ports[0]
}

// FreePorts returns n distinct free loopback ports (see [FreePort]). All n
// are held open together while they are chosen, so the kernel cannot hand the
// same one out twice.
func FreePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freePorts(n)
	if err != nil {
		t.Fatalf("testserver: %v", err)
		return nil
	}
	return ports
}

func freePorts(n int) ([]int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for tries := 0; len(ports) < n; tries++ {
		if tries == maxPortTries {
			return nil, fmt.Errorf("no free loopback port after %d listens", maxPortTries)
		}
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		// Keep even a port that was handed out before open until the end,
		// so the kernel moves on to another one.
		held = append(held, l)
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut.ports[port] {
			continue
		}
		handedOut.ports[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}
