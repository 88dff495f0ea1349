package testserver

import (
	"bufio"
	"crypto/tls"
	"net"
	"testing"
	"time"
)

// tlsPing sends PING over TLS and returns the reply.
func tlsPing(addr string, cfg *tls.Config) (string, error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(pingCommand)); err != nil {
		return "", err
	}
	return readReply(bufio.NewReader(conn))
}

func TestTLS(t *testing.T) {
	s := Start(t, Config{TLS: true})
	if s.TLSAddr() == "" || s.TLSPort() == s.Port() {
		t.Fatalf("TLSAddr() = %q, Addr() = %q", s.TLSAddr(), s.Addr())
	}
	cfg := s.ClientTLSConfig()
	if cfg == nil || cfg.Certificates != nil {
		t.Fatalf("ClientTLSConfig() = %+v, want one without a client certificate", cfg)
	}
	if got, err := tlsPing(s.TLSAddr(), cfg); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS = %q, %v", got, err)
	}

	// The certificate is also valid for the IP address a dialer derives
	// the server name from.
	byIP := s.ClientTLSConfig()
	byIP.ServerName = ""
	if got, err := tlsPing(s.TLSAddr(), byIP); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS verified by IP = %q, %v", got, err)
	}

	// The chain is really checked: without the CA the handshake fails.
	noCA := s.ClientTLSConfig()
	noCA.RootCAs = nil
	if _, err := tlsPing(s.TLSAddr(), noCA); err == nil {
		t.Fatal("a client that does not trust the generated CA connected")
	}

	if got := s.Do(t, "PING"); got != "PONG" {
		t.Fatalf("PING on the plain port = %q", got)
	}

	// TLS survives a restart on the same ports.
	s.Stop(t)
	s.Restart(t)
	if got, err := tlsPing(s.TLSAddr(), s.ClientTLSConfig()); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS after Restart = %q, %v", got, err)
	}
}

func TestTLSClientAuth(t *testing.T) {
	s := Start(t, Config{ClientAuth: true})
	cfg := s.ClientTLSConfig()
	if s.TLSAddr() == "" || cfg == nil || len(cfg.Certificates) != 1 {
		t.Fatalf("TLSAddr() = %q, ClientTLSConfig() = %+v: ClientAuth implies TLS with a client certificate", s.TLSAddr(), cfg)
	}
	if got, err := tlsPing(s.TLSAddr(), cfg); err != nil || got != "PONG" {
		t.Fatalf("PING over TLS with a client certificate = %q, %v", got, err)
	}
	noCert := s.ClientTLSConfig()
	noCert.Certificates = nil
	if got, err := tlsPing(s.TLSAddr(), noCert); err == nil {
		t.Fatalf("PING over TLS without a client certificate = %q, want a failure", got)
	}
}
