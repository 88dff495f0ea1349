package testserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certFiles names the PEM files written for a TLS server and holds the client
// configuration that trusts them.
type certFiles struct {
	caCert, serverCert, serverKey string
	client                        *tls.Config
}

// pemFile is one file writeCerts writes; keys are readable by the owner only.
type pemFile struct {
	path string
	data []byte
	mode os.FileMode
}

// certValidity is long enough for any test run and short enough that a
// leaked temporary directory holds nothing useful for long.
const certValidity = 7 * 24 * time.Hour

// writeCerts generates a CA, a server certificate valid for 127.0.0.1, ::1
// and localhost and, when clientAuth is set, a client certificate, writes
// them into dir and returns a client configuration trusting the CA.
func writeCerts(dir string, clientAuth bool) (*certFiles, error) {
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "respire testserver CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(certValidity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}

	// The server certificate also allows client authentication, because
	// Redis presents it as its client certificate when it replicates over TLS.
	srvCertPEM, srvKeyPEM, err := leaf(ca, caKey, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}, now)
	if err != nil {
		return nil, err
	}

	files := &certFiles{
		caCert:     filepath.Join(dir, caCertFile),
		serverCert: filepath.Join(dir, srvCertFile),
		serverKey:  filepath.Join(dir, srvKeyFile),
	}
	writes := []pemFile{
		{files.caCert, pemBlock("CERTIFICATE", caDER), 0o644},
		{files.serverCert, srvCertPEM, 0o644},
		{files.serverKey, srvKeyPEM, 0o600},
	}

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	files.client = &tls.Config{
		RootCAs: pool,
		// Set, so that configurations used with tls.Client directly verify
		// too; the certificate is valid for this name and for 127.0.0.1.
		ServerName: "localhost",
		MinVersion: tls.VersionTLS12,
	}

	if clientAuth {
		cliCertPEM, cliKeyPEM, err := leaf(ca, caKey, &x509.Certificate{
			Subject:     pkix.Name{CommonName: "respire testserver client"},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}, now)
		if err != nil {
			return nil, err
		}
		writes = append(writes,
			pemFile{filepath.Join(dir, cliCertFile), cliCertPEM, 0o644},
			pemFile{filepath.Join(dir, cliKeyFile), cliKeyPEM, 0o600},
		)
		pair, err := tls.X509KeyPair(cliCertPEM, cliKeyPEM)
		if err != nil {
			return nil, err
		}
		files.client.Certificates = []tls.Certificate{pair}
	}

	for _, w := range writes {
		if err := os.WriteFile(w.path, w.data, w.mode); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// leaf issues a certificate from tmpl signed by the CA and returns it and its
// key as PEM.
func leaf(ca *x509.Certificate, caKey *ecdsa.PrivateKey, tmpl *x509.Certificate, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial()
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = now.Add(certValidity)
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", keyDER), nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}
