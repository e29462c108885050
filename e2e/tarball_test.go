//go:build unix

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/locktui/locktui/internal/testsupport/redistest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// npmStepTimeout bounds each npm or node step of the tarball test on a loaded machine.
const npmStepTimeout = 2 * time.Minute

// npmInstallHint tells a developer how to get npm, which the tarball test runs.
const npmInstallHint = "npm not found on PATH: it comes with Node.js (https://nodejs.org), or `apt-get install -y npm` on Debian/Ubuntu"

// bridgePackage is the Node package's directory under the module root.
const bridgePackage = "compat/medusa-locking-bridge"

// TestPackedTarballInstallsAsMedusaProvider packs the Node package with `npm pack` as the README
// says, checks that the tarball holds exactly the files the package needs (no tests), installs it
// into a scratch app with `npm install <tarball>`, and loads it from there: first with plain
// require() and import() in an app without @medusajs/framework, then as Medusa does, by
// MedusaModule.bootstrap of the Locking module with the package as its default provider, making
// calls through the module to a real bridge and Redis.
func TestPackedTarballInstallsAsMedusaProvider(t *testing.T) {
	node, compat := nodeEnv(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal(npmInstallHint)
	}
	root, err := moduleRoot()
	require.NoError(t, err)
	pkgDir := filepath.Join(root, filepath.FromSlash(bridgePackage))

	tarball, files := npmPack(t, npm, pkgDir)
	assert.Equal(t, packageFiles(t, pkgDir), files, "the files of %s", filepath.Base(tarball))

	app := scratchApp(t, compat, pkgDir)
	r := runStep(t, "npm install <tarball>", exec.Command(npm, "install", "--prefer-offline", "--no-audit", "--no-fund", tarball), app)
	require.Equal(t, 0, r.code, "npm install %s in the scratch app failed:\n%s", filepath.Base(tarball), r.stderr)

	// An app without @medusajs/framework (the package's optional peer): the plain exports.
	var plain struct {
		Entry               string        `json:"entry"`
		TypesFileExists     bool          `json:"typesFileExists"`
		Exports             exportsReport `json:"exports"`
		ESMNamedCreate      bool          `json:"esmNamedCreate"`
		ESMDefaultIsExports bool          `json:"esmDefaultIsExports"`
	}
	scratchScript(t, node, root, app, map[string]any{"phase": "plain"}, &plain)
	installed, err := filepath.EvalSymlinks(filepath.Join(app, "node_modules"))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(plain.Entry, installed+string(filepath.Separator)),
		"the package is loaded from the scratch app's node_modules, not from the checkout: %s", plain.Entry)
	assert.True(t, plain.TypesFileExists, "package.json's types names a file in the tarball")
	assert.Equal(t, exportsReport{
		Module: "locking", Identifiers: []string{"locking-bridge"}, ServiceIsProviderClass: true, LoaderCount: 1,
		LoaderIsLoader: true, DefaultHasServices: true, CreateIsFunction: true, UsesMedusaErrors: false,
	}, plain.Exports, "require() without @medusajs/framework")
	assert.True(t, plain.ESMNamedCreate, "import { createBridgeLockingProvider } works from an ES module")
	assert.True(t, plain.ESMDefaultIsExports, "an ES module's default import is module.exports")

	// A Medusa app: @medusajs/framework and @medusajs/locking installed beside the package, here
	// linked from compat/node_modules (the versions the suite pins) instead of installed again.
	scope := filepath.Join(app, "node_modules", "@medusajs")
	require.NoError(t, os.MkdirAll(scope, 0o755))
	for _, name := range []string{"framework", "locking"} {
		require.NoError(t, os.Symlink(filepath.Join(compat, "node_modules", "@medusajs", name), filepath.Join(scope, name)))
	}
	srv := redistest.Start(t)
	rdb := srv.Client(t)
	b := startBridge(t, srv.URL)
	const key, owner = "e2e:tarball", "scratch-app"
	var medusa struct {
		Exports                exportsReport `json:"exports"`
		ProviderIsPackageClass bool          `json:"providerIsPackageClass"`
		DefaultProviderID      string        `json:"defaultProviderId"`
		Conflict               *struct {
			IsMedusaError bool   `json:"isMedusaError"`
			Type          string `json:"type"`
			Message       string `json:"message"`
		} `json:"conflict"`
		Executed string   `json:"executed"`
		Logs     []string `json:"logs"`
	}
	scratchScript(t, node, root, app, map[string]any{
		"phase": "medusa", "bridgeUrl": b.URL, "token": b.Token, "key": key, "owner": owner,
	}, &medusa)
	assert.Equal(t, "locking", medusa.Exports.Module)
	assert.True(t, medusa.Exports.UsesMedusaErrors, "with @medusajs/framework installed, errors are MedusaErrors")
	assert.True(t, medusa.ProviderIsPackageClass, "the Locking module's provider is the installed package's class")
	assert.Equal(t, "locking-bridge", medusa.DefaultProviderID)
	assert.Contains(t, medusa.Logs, `info: Connection to the bridge in "locking-bridge" provider established (`+b.URL+`)`)
	if assert.NotNil(t, medusa.Conflict, "a second owner's acquire through the module is refused") {
		assert.True(t, medusa.Conflict.IsMedusaError)
		assert.Equal(t, "conflict", medusa.Conflict.Type)
		assert.Equal(t, fmt.Sprintf("Failed to acquire lock for key %q", key), medusa.Conflict.Message)
	}
	assert.Equal(t, "ran with a live signal", medusa.Executed)

	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	assert.Equal(t, owner, rdb.Get(ctx, "medusa_lock:"+key).Val(), "the lock taken through the module is in Redis")
	assert.Zero(t, rdb.Exists(ctx, "medusa_lock:"+key+":execute").Val(), "execute released its key")
}

// exportsReport is scratch-app.js's view of the package's exports.
type exportsReport struct {
	Module                 string   `json:"module"`
	Identifiers            []string `json:"identifiers"`
	ServiceIsProviderClass bool     `json:"serviceIsProviderClass"`
	LoaderCount            int      `json:"loaderCount"`
	LoaderIsLoader         bool     `json:"loaderIsLoader"`
	DefaultHasServices     bool     `json:"defaultHasServices"`
	CreateIsFunction       bool     `json:"createIsFunction"`
	UsesMedusaErrors       bool     `json:"usesMedusaErrors"`
}

// npmPack runs `npm pack` in pkgDir into a temporary directory and returns the tarball's path and
// the sorted paths of the files in it.
func npmPack(t *testing.T, npm, pkgDir string) (tarball string, files []string) {
	t.Helper()
	dest := t.TempDir()
	r := runStep(t, "npm pack", exec.Command(npm, "pack", "--json", "--pack-destination", dest), pkgDir)
	require.Equal(t, 0, r.code, "npm pack in %s failed:\n%s", bridgePackage, r.stderr)
	var packed []struct {
		Filename string `json:"filename"`
		Files    []struct {
			Path string `json:"path"`
		} `json:"files"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &packed), "npm pack --json printed:\n%s", r.stdout)
	require.Len(t, packed, 1, "npm pack --json printed:\n%s", r.stdout)
	for _, f := range packed[0].Files {
		files = append(files, f.Path)
	}
	slices.Sort(files)
	return filepath.Join(dest, packed[0].Filename), files
}

// packageFiles is what the tarball must hold, sorted: package.json and what its "files" field
// names, each entry a file or a directory ending in "/" (every file under it), and nothing else
// (no tests, no test support). The "files" field is the one list of packed files:
// scripts/release-check expands it by the same rule and compares it with `npm pack --dry-run`.
func packageFiles(t *testing.T, pkgDir string) []string {
	t.Helper()
	var manifest struct {
		Files []string `json:"files"`
	}
	readJSON(t, filepath.Join(pkgDir, "package.json"), &manifest)
	require.NotEmpty(t, manifest.Files, `package.json has a "files" field`)
	files := []string{"package.json"}
	for _, entry := range manifest.Files {
		if !strings.HasSuffix(entry, "/") {
			files = append(files, entry)
			continue
		}
		err := filepath.WalkDir(filepath.Join(pkgDir, filepath.FromSlash(entry)), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(pkgDir, path)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		require.NoError(t, err, `package.json "files": %s`, entry)
	}
	slices.Sort(files)
	return files
}

// scratchApp makes an empty app directory with a package.json. Its package-lock.json lists the
// package's dependencies as compat/package-lock.json pins them, so that npm takes them from the
// npm cache that `npm ci` in compat/ filled instead of asking the registry; the package itself
// and anything the lock does not have are resolved as for any user (--prefer-offline).
func scratchApp(t *testing.T, compat, pkgDir string) string {
	t.Helper()
	app := t.TempDir()
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(pkgDir, "package.json"), &manifest)
	var compatLock struct {
		Packages map[string]json.RawMessage `json:"packages"`
	}
	readJSON(t, filepath.Join(compat, "package-lock.json"), &compatLock)

	const name, version = "locktui-scratch-app", "0.0.0"
	packages := map[string]any{"": map[string]string{"name": name, "version": version}}
	var add func(deps map[string]string)
	add = func(deps map[string]string) {
		for dep := range deps {
			path := "node_modules/" + dep
			entry, ok := compatLock.Packages[path]
			if _, seen := packages[path]; seen || !ok {
				continue
			}
			packages[path] = entry
			var e struct {
				Dependencies map[string]string `json:"dependencies"`
			}
			require.NoError(t, json.Unmarshal(entry, &e), "compat/package-lock.json: %s", path)
			add(e.Dependencies)
		}
	}
	add(manifest.Dependencies)
	writeJSON(t, filepath.Join(app, "package.json"), map[string]any{"name": name, "version": version, "private": true})
	writeJSON(t, filepath.Join(app, "package-lock.json"), map[string]any{
		"name": name, "version": version, "lockfileVersion": 3, "requires": true, "packages": packages,
	})
	return app
}

// scratchScript runs node/scratch-app.js in app with cfg and decodes its JSON report into out.
func scratchScript(t *testing.T, node, root, app string, cfg map[string]any, out any) {
	t.Helper()
	cfgJSON, err := json.Marshal(cfg)
	require.NoError(t, err)
	what := fmt.Sprintf("scratch-app.js (%s)", cfg["phase"])
	r := runStep(t, what, exec.Command(node, filepath.Join(root, "e2e", "node", "scratch-app.js"), string(cfgJSON)), app)
	require.Equal(t, 0, r.code, "%s failed:\n%s", what, r.stderr)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), out), "%s printed:\n%s\nstderr:\n%s", what, r.stdout, r.stderr)
}

// runStep runs cmd in dir within npmStepTimeout; a step that runs out of time fails the test.
func runStep(t *testing.T, what string, cmd *exec.Cmd, dir string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), npmStepTimeout)
	defer cancel()
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "npm_config_update_notifier=false")
	r := runCommand(ctx, cmd)
	if ctx.Err() != nil {
		t.Fatalf("e2e: %s did not finish within %s:\n%s", what, npmStepTimeout, r.stderr)
	}
	return r
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, v), "%s", path)
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := json.MarshalIndent(v, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, append(data, '\n'), 0o644))
}
