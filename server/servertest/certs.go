package servertest

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
	"testing"
	"time"
)

// Certs are PEM files for TLS tests, under a test's temporary directory: a
// CA, a server certificate it signed for 127.0.0.1, ::1 and localhost, a
// client certificate it signed, and a "rogue" client certificate signed by
// another CA, which a server trusting only the first must refuse.
type Certs struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	RogueCert, RogueKey   string
	pool                  *x509.CertPool
	client, rogue         tls.Certificate
}

// NewCerts writes a fresh set of certificates.
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	dir := t.TempDir()
	c := &Certs{}
	ca, caKey := newCA(t, "infill test CA")
	other, otherKey := newCA(t, "rogue CA")
	write := func(name string, blocks ...*pem.Block) string {
		p := filepath.Join(dir, name)
		var data []byte
		for _, b := range blocks {
			data = append(data, pem.EncodeToMemory(b)...)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	c.CAFile = write("ca.pem", &pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw})
	leaf := func(name string, server bool, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (certFile, keyFile string, cert tls.Certificate) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature,
		}
		if server {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		} else {
			tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile = write(name+".pem", &pem.Block{Type: "CERTIFICATE", Bytes: der})
		keyFile = write(name+"-key.pem", &pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
		cert, err = tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		return certFile, keyFile, cert
	}
	c.ServerCert, c.ServerKey, _ = leaf("server", true, ca, caKey)
	c.ClientCert, c.ClientKey, c.client = leaf("client", false, ca, caKey)
	c.RogueCert, c.RogueKey, c.rogue = leaf("rogue", false, other, otherKey)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(ca)
	return c
}

// ClientTLS is a client configuration trusting the CA and presenting the
// client certificate.
func (c *Certs) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{c.client}, MinVersion: tls.VersionTLS12}
}

// RogueTLS trusts the CA but presents the rogue client certificate.
func (c *Certs) RogueTLS() *tls.Config {
	return &tls.Config{RootCAs: c.pool, Certificates: []tls.Certificate{c.rogue}, MinVersion: tls.VersionTLS12}
}

// NoCertTLS trusts the CA and presents no client certificate.
func (c *Certs) NoCertTLS() *tls.Config {
	return &tls.Config{RootCAs: c.pool, MinVersion: tls.VersionTLS12}
}

func newCA(t testing.TB, name string) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(t), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func serial(t testing.TB) *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}
