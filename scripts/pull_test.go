package scripts_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ollama/ollama/api"

	"github.com/infill-dev/infill/inference/ollamatest"
	"github.com/infill-dev/infill/server/servertest"
)

// TestPullModelFromRegistry: a pull through the API of an Ollama that
// reaches a registry succeeds, with a progress line on stderr and the model
// listed afterwards. Ollama's registry cannot be reached from a test, so a
// registry of the test's own (TLS, its CA trusted by that Ollama through
// SSL_CERT_FILE) serves the tiny model as another Ollama stores it — the
// manifest and blobs speak the registry API that `ollama pull` uses: the
// manifest, then each blob through a redirect to another host name, as
// Ollama's registry redirects to its storage, fetched by ranges.
func TestPullModelFromRegistry(t *testing.T) {
	t.Parallel()
	src := ollamatest.Start(t)
	models := filepath.Join(src.Dir, "models")
	manifest, err := os.ReadFile(filepath.Join(models, "manifests", "registry.ollama.ai", "library", src.Model, "latest"))
	if err != nil {
		t.Fatalf("the source Ollama's manifest of %s: %v", src.Model, err)
	}
	certs := servertest.NewCerts(t) // the server's is for 127.0.0.1 and localhost
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		t.Fatal(err)
	}
	var blobsServed atomic.Int64
	var port string
	reg := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		prefix := "/v2/library/" + src.Model
		switch {
		case r.URL.Path == prefix+"/manifests/latest":
			w.Header().Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
			w.Write(manifest)
		case strings.HasPrefix(r.URL.Path, prefix+"/blobs/sha256:"):
			// The registry's host redirects to storage on another host name.
			digest := strings.TrimPrefix(r.URL.Path, prefix+"/blobs/")
			http.Redirect(w, r, "https://localhost:"+port+"/storage/"+digest, http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/storage/sha256:") && r.Host == "localhost:"+port:
			digest := strings.TrimPrefix(r.URL.Path, "/storage/")
			f, err := os.Open(filepath.Join(models, "blobs", strings.Replace(digest, ":", "-", 1)))
			if err != nil {
				http.NotFound(w, r)
				return
			}
			defer f.Close()
			if r.Method == http.MethodGet {
				blobsServed.Add(1)
			}
			http.ServeContent(w, r, "", time.Time{}, f)
		default:
			http.NotFound(w, r)
		}
	}))
	reg.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	reg.StartTLS()
	t.Cleanup(reg.Close)
	_, port, _ = net.SplitHostPort(reg.Listener.Addr().String())

	dst := ollamatest.StartWithOptions(t, ollamatest.Options{Env: []string{"SSL_CERT_FILE=" + certs.CAFile}})
	// The destination lacks the blobs: its own copy of the tiny model goes
	// (and with it the blobs it shares with the source).
	if err := dst.Client().Delete(context.Background(), &api.DeleteRequest{Model: dst.Model}); err != nil {
		t.Fatalf("delete %s: %v", dst.Model, err)
	}
	name := "127.0.0.1:" + port + "/library/" + src.Model + ":latest"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(repoRoot(t), "scripts", "setup.sh"), "pull-model", dst.Host, name)
	cmd.Env = env()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("pull-model: %v\nstdout %q\nstderr:\n%s\nOllama's log:\n%s", err, out, stderr.String(), dst.Logs())
	}
	for _, want := range []string{"setup.sh: pulling " + name + ": pulling manifest",
		"pulled " + name + " into the Ollama at " + dst.URL} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
		}
	}
	if len(out) != 0 {
		t.Errorf("stdout %q: want nothing on success", out)
	}
	if blobsServed.Load() == 0 {
		t.Errorf("no blob was downloaded: the pull did not exercise the transfer")
	}
	list, err := dst.Client().List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, m := range list.Models {
		found = found || m.Name == name
	}
	if !found {
		t.Errorf("after the pull the Ollama lists %v, not %s", list.Models, name)
	}
}
