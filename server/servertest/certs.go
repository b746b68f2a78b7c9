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
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caTmpl := func(name string) *x509.Certificate {
		return &x509.Certificate{Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
			KeyUsage: x509.KeyUsageCertSign}
	}
	ca, caKey := issue(t, caTmpl("infill test CA"), nil, nil)
	other, otherKey := issue(t, caTmpl("rogue CA"), nil, nil)
	// leaf issues a certificate signed by parent and writes it and its key.
	leaf := func(name string, usage x509.ExtKeyUsage, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (certFile, keyFile string, cert tls.Certificate) {
		tmpl := &x509.Certificate{Subject: pkix.Name{CommonName: name}, KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		if usage == x509.ExtKeyUsageServerAuth {
			tmpl.DNSNames = []string{"localhost"}
			tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
		}
		c, key := issue(t, tmpl, parent, parentKey)
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		certFile, keyFile = write(name+".pem", "CERTIFICATE", c.Raw), write(name+"-key.pem", "EC PRIVATE KEY", kder)
		return certFile, keyFile, tls.Certificate{Certificate: [][]byte{c.Raw}, PrivateKey: key, Leaf: c}
	}
	c := &Certs{CAFile: write("ca.pem", "CERTIFICATE", ca.Raw), pool: x509.NewCertPool()}
	c.pool.AddCert(ca)
	c.ServerCert, c.ServerKey, _ = leaf("server", x509.ExtKeyUsageServerAuth, ca, caKey)
	c.ClientCert, c.ClientKey, c.client = leaf("client", x509.ExtKeyUsageClientAuth, ca, caKey)
	c.RogueCert, c.RogueKey, c.rogue = leaf("rogue", x509.ExtKeyUsageClientAuth, other, otherKey)
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

// issue makes a key and a certificate from tmpl (valid for a day) signed by
// parent, or by itself when parent is nil.
func issue(t testing.TB, tmpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl.SerialNumber, err = rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62)); err != nil {
		t.Fatal(err)
	}
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}
