// Package testserver starts real redis-server processes for integration tests.
//
// Every integration test of the project that needs a server goes through
// [Start]: it runs redis-server on a free loopback port in a temporary
// directory, waits until the server answers PING, and registers a cleanup that
// kills the process and removes the directory. A [Config] adds ACL users, a
// default-user password, TLS (with a certificate authority and certificates
// generated at start) and extra server arguments; its zero value is a plain
// server without persistence.
//
// [StartGeneration] starts a named server generation instead of the installed
// redis-server: Redis 6.0, Redis 8.6, Valkey 8.1 and Valkey 9.1, which
// build-servers.sh (`make servers`, part of `make test`) builds once from Debian
// source packages into a cache directory, as servers.txt lists them. A test of a
// generation that is not built skips, naming the source package and why.
//
// The package deliberately imports nothing from the client under test. It
// speaks RESP by hand over fresh TCP connections ([Server.Do],
// [Server.DoErr], [Server.DoAs]), so a test can check what the server really
// stored without trusting the code it is testing.
//
// Process lifecycle faults are one call each: [Server.Kill] (SIGKILL),
// [Server.Stop] (SIGTERM, a graceful shutdown), [Server.Restart] on the same
// ports and directory, and [Server.Pause]/[Server.Resume] (SIGSTOP/SIGCONT) to
// make a live server unresponsive. A server with Config.Args "--appendonly
// yes --appendfsync always" restarts with every acknowledged write; the zero
// Config restarts empty. For faults of the client's own process, [StartChild]
// re-executes the test binary to run one test as a child that a test can
// pause, resume and kill ([Child]). [FreePort] and [FreePorts] are exported for
// the harnesses of clusters, sentinels and proxies.
//
// Servers never outlive the test binary: each runs in its own process group
// with --daemonize no and, on Linux, a parent-death signal (SIGKILL), so a
// test binary killed by go test -timeout takes its servers with it. The
// package needs a Unix system; redis-server, redis-sentinel and redis-cli come
// from `apt-get install -y redis-server redis-sentinel redis-tools`, which
// `make test` runs.
//
// # Concurrency
//
// [Start], [FreePort] and [FreePorts] may be called from parallel tests; the
// ports they hand out are distinct within the test binary. The accessors
// ([Server.Addr], [Server.TLSAddr], [Server.Port], [Server.Dir],
// [Server.ClientTLSConfig], [Server.Logs]) and the command methods
// ([Server.Do], [Server.DoErr], [Server.DoAs], [Server.Version]) are safe for
// concurrent use, each command on its own connection. The lifecycle methods
// (Kill, Stop, Restart, Pause, Resume) are serialised by a mutex; like every
// method that takes a testing.TB they must be called from the test's own
// goroutine, because they stop the test on failure.
//
// For each running server and child the package owns one goroutine, which waits for the
// process to exit and reaps it. It ends when the process ends: Kill, Stop or
// the test's cleanup, which kills a server still running and waits for that
// goroutine before the test finishes, so goleak sees none of them. A command
// whose context ends starts a short-lived goroutine that unblocks its I/O.
package testserver
