//go:build unix

package e2e

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"sync"
	"testing"
)

// npmRegistry is an npm registry for one package, on 127.0.0.1, serving what `npm install` and
// `npm ci` ask a registry for: the package's document (packument) at /<name> (npm sends the
// scope's slash as %2f) and the tarball at /<name>/-/<base>-<version>.tgz, as
// registry.npmjs.org lays them out. It stands in for the public registry that a release
// publishes the package to; an `.npmrc` line (scopeLine) points the package's scope at it.
type npmRegistry struct {
	srv     *httptest.Server
	name    string // the package's name, "@scope/base"
	version string
	// TarballURL is the tarball's address, which the lock file of an app records as "resolved".
	TarballURL string
	// Integrity is the tarball's sha512 in Subresource Integrity form, as npm checks it.
	Integrity string

	tarball   []byte
	packument []byte

	mu   sync.Mutex
	hits map[string]int // "packument", "tarball", or the path of any other request
}

// startNPMRegistry serves the tarball that npm pack made; the manifest is the tarball's own
// package/package.json. The server stops when the test ends.
func startNPMRegistry(t *testing.T, tarball string) *npmRegistry {
	t.Helper()
	data, err := os.ReadFile(tarball)
	if err != nil {
		t.Fatalf("e2e: npm registry: %v", err)
	}
	manifest, err := tarballManifest(data)
	if err != nil {
		t.Fatalf("e2e: npm registry: %s: %v", tarball, err)
	}
	name, _ := manifest["name"].(string)
	version, _ := manifest["version"].(string)
	if !strings.HasPrefix(name, "@") || !strings.Contains(name, "/") || version == "" {
		t.Fatalf("e2e: npm registry: %s: want a scoped name and a version, got %q %q", tarball, name, version)
	}
	r := &npmRegistry{name: name, version: version, tarball: data, hits: map[string]int{}}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve)) // 127.0.0.1:0
	t.Cleanup(r.srv.Close)

	sha := sha512.Sum512(data)
	shasum := sha1.Sum(data)
	r.Integrity = "sha512-" + base64.StdEncoding.EncodeToString(sha[:])
	r.TarballURL = r.srv.URL + "/" + name + "/-/" + path.Base(name) + "-" + version + ".tgz"
	manifest["_id"] = name + "@" + version
	manifest["dist"] = map[string]string{"tarball": r.TarballURL, "integrity": r.Integrity, "shasum": hex.EncodeToString(shasum[:])}
	r.packument, err = json.Marshal(map[string]any{
		"_id": name, "name": name,
		"dist-tags": map[string]string{"latest": version},
		"versions":  map[string]any{version: manifest},
	})
	if err != nil {
		t.Fatalf("e2e: npm registry: %v", err)
	}
	return r
}

// scopeLine is the .npmrc line that sends the package's scope to this registry.
func (r *npmRegistry) scopeLine() string {
	scope, _, _ := strings.Cut(r.name, "/")
	return scope + ":registry=" + r.srv.URL + "/\n"
}

// served returns how many requests the registry answered for what ("packument", "tarball").
func (r *npmRegistry) served(what string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.hits[what]
}

// others returns the paths of requests for anything else (answered 404).
func (r *npmRegistry) others() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var paths []string
	for p := range r.hits {
		if p != "packument" && p != "tarball" {
			paths = append(paths, p)
		}
	}
	return paths
}

func (r *npmRegistry) serve(w http.ResponseWriter, req *http.Request) {
	what, body, contentType := req.URL.Path, []byte(`{"error":"not found"}`), "application/json"
	switch {
	case req.Method != http.MethodGet && req.Method != http.MethodHead:
	case req.URL.Path == "/"+r.name: // npm asks for /@scope%2fbase; Path has it decoded
		what, body = "packument", r.packument
	case req.URL.Path == strings.TrimPrefix(r.TarballURL, r.srv.URL):
		what, body, contentType = "tarball", r.tarball, "application/octet-stream"
	}
	r.mu.Lock()
	r.hits[what]++
	r.mu.Unlock()
	w.Header().Set("Content-Type", contentType)
	if what != "packument" && what != "tarball" {
		w.WriteHeader(http.StatusNotFound)
	}
	_, _ = w.Write(body)
}

// tarballManifest returns package/package.json of an npm tarball.
func tarballManifest(data []byte) (map[string]any, error) {
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no package/package.json in the tarball")
		}
		if err != nil {
			return nil, err
		}
		if h.Name != "package/package.json" {
			continue
		}
		var manifest map[string]any
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			return nil, err
		}
		return manifest, nil
	}
}
