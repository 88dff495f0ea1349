package main

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// rueidis's cluster client closes the connections a topology refresh replaced
		// five seconds later, in a goroutine of its own that Close does not stop
		// (rueidis v1.0.79 cluster.go, _refresh): not ours to wait for.
		goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"),
	)
}
