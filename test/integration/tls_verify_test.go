package integration

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"math/big"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/respire/respire"
	"github.com/respire/respire/test/testserver"
)

// testCA is a certificate authority made for one test; nothing is written to disk.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	now := time.Now()
	ca := &testCA{}
	ca.cert, ca.key = issueCert(t, &x509.Certificate{
		Subject:               pkix.Name{CommonName: "respire test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}, nil)
	ca.pool = x509.NewCertPool()
	ca.pool.AddCert(ca.cert)
	return ca
}

// serverCert issues a server certificate for the given names, valid from notBefore to
// notAfter.
func (ca *testCA) serverCert(t *testing.T, dns []string, ips []net.IP, notBefore, notAfter time.Time) tls.Certificate {
	t.Helper()
	cert, key := issueCert(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "respire test server"},
		DNSNames:    dns,
		IPAddresses: ips,
		NotBefore:   notBefore,
		NotAfter:    notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, ca)
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}

// issueCert signs tmpl with a fresh key, by the CA or by itself when ca is nil.
func issueCert(t *testing.T, tmpl *x509.Certificate, ca *testCA) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = serial
	parent, signer := tmpl, key
	if ca != nil {
		parent, signer = ca.cert, ca.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// tlsFront is a TLS listener presenting cert that relays each connection to a plain
// redis-server: a real TLS endpoint whatever TLS support redis-server was built with.
type tlsFront struct {
	ln      net.Listener
	backend string
	wg      sync.WaitGroup
	mu      sync.Mutex
	conns   []net.Conn
}

func startTLSFront(t *testing.T, backend string, cert tls.Certificate) *tlsFront {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	f := &tlsFront{ln: ln, backend: backend}
	f.wg.Add(1)
	go f.accept()
	t.Cleanup(f.close)
	return f
}

func (f *tlsFront) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		b, err := net.Dial("tcp", f.backend)
		if err != nil {
			c.Close()
			continue
		}
		f.mu.Lock()
		f.conns = append(f.conns, c, b)
		f.mu.Unlock()
		f.wg.Add(2)
		go f.pipe(b, c)
		go f.pipe(c, b)
	}
}

// pipe copies until either side ends, then closes both so the other copy ends too.
func (f *tlsFront) pipe(dst, src net.Conn) {
	defer f.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
}

func (f *tlsFront) close() {
	f.ln.Close()
	f.mu.Lock()
	for _, c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// TestTLSVerifiesByDefault connects over TLS to endpoints presenting a good
// certificate, one for another host name, an expired one and one from an unknown CA.
// Only the good one connects; each other fails with the x509 error that names why.
func TestTLSVerifiesByDefault(t *testing.T) {
	s := testserver.Start(t, testserver.Config{})
	ca := newTestCA(t)
	now := time.Now()
	loopback := []net.IP{net.IPv4(127, 0, 0, 1)}
	good := startTLSFront(t, s.Addr(), ca.serverCert(t, []string{"localhost"}, loopback, now.Add(-time.Hour), now.Add(time.Hour)))
	wrongHost := startTLSFront(t, s.Addr(), ca.serverCert(t, []string{"wrong.example"}, nil, now.Add(-time.Hour), now.Add(time.Hour)))
	expired := startTLSFront(t, s.Addr(), ca.serverCert(t, []string{"localhost"}, loopback, now.Add(-2*time.Hour), now.Add(-time.Hour)))
	otherCA := startTLSFront(t, s.Addr(), newTestCA(t).serverCert(t, []string{"localhost"}, loopback, now.Add(-time.Hour), now.Add(time.Hour)))

	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var unknown x509.UnknownAuthorityError
	cases := []struct {
		name  string
		front *tlsFront
		roots *x509.CertPool // nil: the system's roots, which know nothing of the test CA
		check func(error) bool
		host  string // dial this name rather than the listener's IP address
	}{
		{"good certificate", good, ca.pool, func(err error) bool { return err == nil }, ""},
		{"good certificate, dialled by name", good, ca.pool, func(err error) bool { return err == nil }, "localhost"},
		{"wrong host name", wrongHost, ca.pool, func(err error) bool { return errors.As(err, &hostErr) }, ""},
		{"wrong host name, dialled by name", wrongHost, ca.pool, func(err error) bool {
			return errors.As(err, &hostErr) && hostErr.Host == "localhost"
		}, "localhost"},
		{"expired certificate", expired, ca.pool, func(err error) bool {
			return errors.As(err, &invalid) && invalid.Reason == x509.Expired
		}, ""},
		{"unknown authority", otherCA, ca.pool, func(err error) bool { return errors.As(err, &unknown) }, ""},
		{"self-signed CA not in the system roots", good, nil, func(err error) bool { return errors.As(err, &unknown) }, ""},
	}
	for _, tc := range cases {
		for _, how := range []string{"Options", "rediss URL"} {
			t.Run(tc.name+"/"+how, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
				defer cancel()
				addr := tc.front.ln.Addr().String()
				if tc.host != "" {
					_, port, _ := net.SplitHostPort(addr)
					addr = net.JoinHostPort(tc.host, port)
				}
				var o respire.Options
				if how == "Options" {
					// Only the roots are set: verification and the server name (taken from
					// the address) are the client's defaults.
					o = respire.Options{Addrs: []string{addr}, TLS: &tls.Config{RootCAs: tc.roots}}
				} else {
					var err error
					if o, err = respire.ParseURL("rediss://" + addr); err != nil {
						t.Fatal(err)
					}
					if o.TLS == nil || o.TLS.InsecureSkipVerify {
						t.Fatalf("rediss:// gave TLS %+v; want verification on", o.TLS)
					}
					o.TLS.RootCAs = tc.roots
				}
				o.DialTimeout = 5 * time.Second
				c, err := respire.NewClient(ctx, o)
				if err == nil {
					defer c.Close()
					if v, err := c.Do(ctx, "PING"); err != nil {
						t.Fatalf("PING over TLS: %v, %v", v, err)
					}
				}
				if !tc.check(err) {
					t.Fatalf("NewClient: %v", err)
				}
				if err != nil {
					t.Logf("refused as wanted: %v", err)
				}
			})
		}
	}
}
