package servetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// curlForm is the Content-Type curl sends with -d when none is given.
const curlForm = "application/x-www-form-urlencoded"

// TestSeedWalkthrough replays the seed's curl examples ("Basic Usage" and
// "Example: Full Restore Flow") request for request against monty serve over
// HTTPS with only the host changed: same methods, paths, headers and bodies.
func TestSeedWalkthrough(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	const apiKey = "walkthrough-api-key"
	srv := serve(t, "--store", filepath.Join(dir, "sessions"), "--api-key", apiKey, "--tls-cert", cert, "--tls-key", key)
	if srv.url[:8] != "https://" {
		t.Fatalf("served at %s, want https", srv.url)
	}
	call := func(method, path string, body []byte, header ...string) (int, []byte) {
		t.Helper()
		status, _, data, err := srv.do(method, path, body, header...)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		return status, data
	}

	// Basic usage.
	status, data := call("POST", "/exec", []byte(`{
    "lang": "py",
    "code": "x = [1, 2, 3]\ndef add(a, b): return a + b",
    "entity_id": "test",
    "user_id": "user1"
  }`), "Content-Type", "application/json", "x-api-key", apiKey)
	var first execResult
	if err := json.Unmarshal(data, &first); status != 200 || err != nil || first.SessionID == "" || first.ExitCode != 0 || first.Stdout != "" {
		t.Fatalf("first request: %d %s", status, data)
	}
	status, data = call("POST", "/exec", []byte(`{
    "lang": "py",
    "code": "print(sum(x), add(10, 20))",
    "entity_id": "test",
    "user_id": "user1",
    "session_id": "`+first.SessionID+`"
  }`), "Content-Type", "application/json", "x-api-key", apiKey)
	var second execResult
	if err := json.Unmarshal(data, &second); status != 200 || err != nil || second.Stdout != "6 30\n" || second.ExitCode != 0 {
		t.Fatalf("second request: %d %s", status, data)
	}

	// Full restore flow.
	// 1. Execute and create state (curl -d with no Content-Type).
	status, data = call("POST", "/exec", []byte(`{"lang": "py", "code": "secret = 42"}`), "x-api-key", apiKey, "Content-Type", curlForm)
	var created execResult
	if err := json.Unmarshal(data, &created); status != 200 || err != nil || created.SessionID == "" {
		t.Fatalf("step 1: %d %s", status, data)
	}
	sessionID := created.SessionID
	// 2. Download state for caching.
	status, blob := call("GET", "/state/"+sessionID, nil, "x-api-key", apiKey)
	if status != 200 || len(blob) == 0 {
		t.Fatalf("step 2: %d (%d bytes)", status, len(blob))
	}
	// ... time passes, the server state goes away ...
	if status, data = call("DELETE", "/state/"+sessionID, nil, "x-api-key", apiKey); status != 204 {
		t.Fatalf("delete: %d %s", status, data)
	}
	// 3. Check if state exists.
	status, data = call("GET", "/state/"+sessionID+"/info", nil, "x-api-key", apiKey)
	var info struct {
		Exists bool `json:"exists"`
	}
	if err := json.Unmarshal(data, &info); status != 200 || err != nil || info.Exists {
		t.Fatalf("step 3: %d %s", status, data)
	}
	// 4. Restore.
	status, data = call("POST", "/state/"+sessionID, blob, "x-api-key", apiKey, "Content-Type", "application/octet-stream")
	var up struct {
		Message string `json:"message"`
		Size    int    `json:"size"`
	}
	if err := json.Unmarshal(data, &up); status != 201 || err != nil || up.Message != "state_uploaded" || up.Size != len(blob) {
		t.Fatalf("step 4: %d %s", status, data)
	}
	// 5. Execute with restored state.
	status, data = call("POST", "/exec", []byte(`{"lang": "py", "code": "print(secret)", "session_id": "`+sessionID+`"}`), "x-api-key", apiKey, "Content-Type", curlForm)
	var last execResult
	if err := json.Unmarshal(data, &last); status != 200 || err != nil || last.Stdout != "42\n" {
		t.Fatalf("step 5: %d %s", status, data)
	}
}
