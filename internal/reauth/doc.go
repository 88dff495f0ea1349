// Package reauth keeps a client's connections authenticated with the newest
// credentials a provider gives (respire's Options.Credentials): the rotation engine
// behind respire.Client.Reauthenticate and the renewal schedule. Package respire
// adapts its Credentials and its connections to this package's [Credentials] and
// [Conn]; nothing here is on a command's path.
//
// Every dial asks the provider through [Rotation.ForDial], and every connection the
// client dials, of every kind (shared, dedicated, tracking, subscription, lock), is
// registered by the client's OnConnect hook once its handshake is done
// ([Rotation.Register]: one dialled with credentials older than the newest is
// re-authenticated there, before it is handed out; a pass that finds it doing so
// waits for it within the pass's own deadline, not the dial's, and then
// re-authenticates it if newer ones came; so does a pass that finds a connection still
// re-authenticating with older credentials for an earlier pass). A goroutine owned by
// the Rotation asks the provider again before the credentials it last gave expire,
// and re-authenticates every registered connection still alive and not yet
// authenticated with the new ones (Conn.Reauth: for a *conn.Conn, in order with the
// connection's traffic, and behind the EXEC of a transaction open on it).
//
// The refresh is due at ExpiresAt − max(10% of the life the credentials had when they
// were fetched, 1 s): an hour-long token is renewed six minutes before it ends, a
// ten-second one a second before. Credentials without ExpiresAt are not refreshed on a
// schedule ([Rotation.Rotate] does it on demand). A provider that fails (or gives no
// password) is asked again after 250 ms, doubling to 5 s, and each failure is reported
// to the observer (observe.ConnReauth with Err and no Addr); connections keep the
// credentials they have meanwhile. The schedule waits 5 s for the connections' AUTHs
// (less when the next renewal is due sooner); one still waiting then (queued behind a
// blocking command, or a transaction in progress) finishes in the background and is
// not sent again meanwhile; if newer credentials came while it waited, it is
// re-authenticated with them as soon as it ends. A refused connection (even one
// refused in the background) is retried with the same backoff, alone: the others, and
// the renewal due at its time, do not wait for it.
//
// # Concurrency
//
// A Rotation's methods are safe for concurrent use. [Rotation.Start] starts the
// goroutine of the schedule, and each pass runs one goroutine per connection it
// re-authenticates; [Rotation.Close] stops them all and waits for them (a
// re-authentication in progress ends with the Rotation's context).
package reauth
