//go:build unix

package e2e

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bridgePackageName is the Node package's name on npm, as the READMEs' install command names it.
const bridgePackageName = "@locktui/medusa-locking-bridge"

// TestMedusaBuild proves that the documented install of the Node package survives `medusa
// build` on a clean machine, as a Medusa team deploys: the package comes from a registry (a
// stand-in for npm, npmregistry_test.go, serving the tarball `npm pack` makes), and the app is
// compat/medusa-app copied into a temporary directory as an app of its own (standaloneApp),
// outside this checkout, so nothing of compat/ is reachable from it. The test runs, as the
// READMEs' Install sections give them:
//
//	npm install @locktui/medusa-locking-bridge   # in the app (npm cache as it is: mostly offline)
//	npx medusa build                             # admin off
//	cd .medusa/server && npm ci                  # with an empty npm cache: a clean machine
//	npm run start                                # with the bridge as the Locking provider
//
// and checks that the app's lock file records the package's registry URL (not a file: path);
// that `npm ci` in .medusa/server, which gets only package.json and the lock file (no .npmrc),
// fetches the tarball from that URL and installs it (.medusa/server moved out of the app first,
// as a deploy ships it, so that Node cannot fall back on the app's node_modules); and that the
// built server, on a migrated and seeded database (startMedusaStack), completes a cart through
// the package: exactly one order, the lock granted by the bridge. Each phase's duration is
// logged: about 2.5 minutes in all on 2 cores, most of it the two npm installs of Medusa's
// ~700 MB tree (the second from the network).
func TestMedusaBuild(t *testing.T) {
	began := time.Now()
	app := findMedusaApp(t)
	_, compat := nodeEnv(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal(npmInstallHint)
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatal(npmInstallHint)
	}
	prebuilt := make(chan struct{})
	go func() { // the bridge builds while npm works
		defer close(prebuilt)
		buildOnce.Do(func() { built, buildErr = build() })
	}()
	t.Cleanup(func() { <-prebuilt })

	var phases []string
	timed := func(phase string, at time.Time) {
		took := time.Since(at).Round(time.Millisecond)
		phases = append(phases, phase+" "+took.String())
		t.Logf("medusa build: %s took %s", phase, took)
	}

	at := time.Now()
	tarball, _ := npmPack(t, npm, filepath.Join(filepath.Dir(compat), filepath.FromSlash(bridgePackage)))
	reg := startNPMRegistry(t, tarball)
	require.Equal(t, bridgePackageName, reg.name, "the packed package's name")
	dir := standaloneApp(t, compat, app.dir, reg)
	timed("npm pack and the app", at)

	// The README's install, in an app whose lock file already pins Medusa's tree (the npm cache
	// that `npm ci` in compat/ filled has it: --prefer-offline, as a developer's machine).
	at = time.Now()
	runNPM(t, dir, npmEnv("npm_config_prefer_offline=true"), npm, "install", bridgePackageName)
	timed("npm install "+bridgePackageName, at)
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	readJSON(t, filepath.Join(dir, "package.json"), &manifest)
	assert.Equal(t, reg.version, strings.TrimPrefix(manifest.Dependencies[bridgePackageName], "^"),
		"package.json names the registry version (%q)", manifest.Dependencies[bridgePackageName])
	require.GreaterOrEqual(t, reg.served("packument"), 1, "npm install asked the registry for the package")

	at = time.Now()
	runNPM(t, dir, npmEnv(), npx, "medusa", "build")
	timed("npx medusa build", at)
	server := filepath.Join(dir, ".medusa", "server")
	for _, f := range []string{"package.json", "package-lock.json", "medusa-config.js"} {
		require.FileExists(t, filepath.Join(server, f), "medusa build's output")
	}
	require.NoFileExists(t, filepath.Join(server, ".npmrc"),
		"medusa build copies no .npmrc: npm ci there knows the registry only from the lock file")
	var lock struct {
		Packages map[string]struct {
			Version   string `json:"version"`
			Resolved  string `json:"resolved"`
			Integrity string `json:"integrity"`
		} `json:"packages"`
	}
	readJSON(t, filepath.Join(server, "package-lock.json"), &lock)
	entry := lock.Packages["node_modules/"+bridgePackageName]
	assert.Equal(t, reg.version, entry.Version, "the lock file's version of %s", bridgePackageName)
	assert.Equal(t, reg.TarballURL, entry.Resolved, "the lock file records the registry's tarball URL (not a file: path)")
	assert.Equal(t, reg.Integrity, entry.Integrity, "the lock file's integrity of %s", bridgePackageName)

	// A clean machine: .medusa/server on its own, out of reach of the app's node_modules (Node
	// looks for packages in every parent directory), with an npm cache that holds nothing, not
	// even this package.
	deployed := filepath.Join(t.TempDir(), "server")
	require.NoError(t, os.Rename(server, deployed))
	server = deployed
	at = time.Now()
	fetched := reg.served("tarball")
	runNPM(t, server, npmEnv("npm_config_cache="+t.TempDir()), npm, "ci")
	timed("npm ci in .medusa/server (empty npm cache)", at)
	assert.Equal(t, fetched+1, reg.served("tarball"), "npm ci fetched the tarball from the registry once")
	var installed struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	readJSON(t, filepath.Join(server, "node_modules", filepath.FromSlash(bridgePackageName), "package.json"), &installed)
	assert.Equal(t, bridgePackageName+"@"+reg.version, installed.Name+"@"+installed.Version,
		"the package installed in .medusa/server/node_modules")
	if others := reg.others(); len(others) > 0 {
		t.Logf("medusa build: the registry also got (404) %s", strings.Join(others, ", "))
	}

	at = time.Now()
	stack := startMedusaStack(t, app) // migrates and seeds with compat/medusa-app: the same Medusa
	bridge := startBridge(t, stack.redis.URL)
	timed("postgres, redis, migrate, seed, bridge", at)

	at = time.Now()
	builtStack := *stack
	builtStack.app.dir, builtStack.app.npm = server, npm
	m := builtStack.startServer(t, "medusa-built", medusaLocking{
		bridge: true, url: bridge.URL, token: bridge.Token, resolve: bridgePackageName,
	})
	timed("npm run start until /health", at)

	at = time.Now()
	granted := bridgeLockRequests(t, bridge)
	cartID, orderID := m.store().completeCart(t)
	timed("one cart", at)
	assert.Equal(t, 1, stack.ordersOfCart(t, cartID), "orders of cart %s", cartID)
	assert.GreaterOrEqual(t, bridgeLockRequests(t, bridge)-granted, 1,
		"the bridge granted the completion's lock (the built server's Locking module goes through it)")
	t.Logf("medusa build: cart %s completed as order %s by the built server", cartID, orderID)
	t.Logf("medusa build: phases: %s; whole test %s", strings.Join(phases, ", "), time.Since(began).Round(time.Millisecond))
}

// standaloneApp copies the Medusa app (compat/medusa-app at src: medusa-config.js,
// tsconfig.json, src/) into a new temporary directory as an app with its own dependencies:
// a package.json with the app's dependencies (@medusajs/medusa, cli and framework, pinned as
// compat/package.json pins them) and TypeScript (which `medusa build` compiles with) as a
// development dependency; a lock file with compat/package-lock.json's tree, as an app's lock
// file pins Medusa's tree, so that npm takes it from the npm cache; and an .npmrc that sends
// the package's scope to reg. It returns the app's directory.
func standaloneApp(t *testing.T, compat, src string, reg *npmRegistry) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		switch {
		case rel == "node_modules" || rel == ".medusa":
			return filepath.SkipDir
		case rel == "package.json" || rel == "package-lock.json":
			return nil
		case d.IsDir():
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o644)
	})
	require.NoError(t, err, "copy %s", src)
	require.FileExists(t, filepath.Join(dir, "tsconfig.json"), "%s needs a tsconfig.json for medusa build", medusaAppPath)

	var appManifest struct {
		Name         string            `json:"name"`
		Version      string            `json:"version"`
		Scripts      map[string]string `json:"scripts"`
		Dependencies map[string]string `json:"dependencies"`
		Engines      map[string]string `json:"engines"`
	}
	readJSON(t, filepath.Join(src, "package.json"), &appManifest)
	var pins struct {
		Dependencies    map[string]string `json:"dependencies"`
		DevDependencies map[string]string `json:"devDependencies"`
	}
	readJSON(t, filepath.Join(compat, "package.json"), &pins)
	for name, version := range appManifest.Dependencies {
		require.Equal(t, pins.Dependencies[name], version, "%s/package.json pins %s as compat/package.json does", medusaAppPath, name)
	}
	require.Contains(t, appManifest.Scripts, "start", "%s/package.json has a start script", medusaAppPath)
	require.NotEmpty(t, pins.DevDependencies["typescript"], "compat/package.json pins typescript")
	root := map[string]any{
		"name": appManifest.Name, "version": appManifest.Version,
		"dependencies":    appManifest.Dependencies,
		"devDependencies": map[string]string{"typescript": pins.DevDependencies["typescript"]},
		"engines":         appManifest.Engines,
	}
	writeJSON(t, filepath.Join(dir, "package.json"), map[string]any{
		"name": appManifest.Name, "version": appManifest.Version, "private": true, "scripts": appManifest.Scripts,
		"dependencies": root["dependencies"], "devDependencies": root["devDependencies"], "engines": appManifest.Engines,
	})

	var lock map[string]any
	readJSON(t, filepath.Join(compat, "package-lock.json"), &lock)
	packages, ok := lock["packages"].(map[string]any)
	require.True(t, ok, "compat/package-lock.json has packages")
	packages[""] = root
	lock["name"], lock["version"] = appManifest.Name, appManifest.Version
	writeJSON(t, filepath.Join(dir, "package-lock.json"), lock)

	require.NoError(t, os.WriteFile(filepath.Join(dir, ".npmrc"), []byte(reg.scopeLine()), 0o644))
	return dir
}

// npmEnv is the environment of the test's npm commands: the machine's, with extra, and with
// npm's defaults for what this test checks, whatever the user's npm config says: lock files
// record each package's tarball URL ("resolved"; the URL is how npm ci in .medusa/server finds
// the package, as it finds a published one on registry.npmjs.org), no audit or funding
// requests, no update check.
func npmEnv(extra ...string) []string {
	return append(append(os.Environ(),
		"npm_config_omit_lockfile_registry_resolved=false",
		"npm_config_audit=false",
		"npm_config_fund=false",
		"npm_config_update_notifier=false",
	), extra...)
}

// runNPM runs program args… in dir with env within medusaStepTimeout, failing the test with the
// end of its output unless it succeeds.
func runNPM(t *testing.T, dir string, env []string, program string, args ...string) {
	t.Helper()
	what := filepath.Base(program) + " " + strings.Join(args, " ")
	ctx, cancel := context.WithTimeout(t.Context(), medusaStepTimeout)
	defer cancel()
	cmd := exec.Command(program, args...)
	cmd.Dir, cmd.Env = dir, env
	r := runCommand(ctx, cmd)
	if ctx.Err() != nil {
		t.Fatalf("e2e: %s in %s did not finish within %s:\n%s", what, dir, medusaStepTimeout, tailOf(r.stdout+r.stderr, 4000))
	}
	if r.code != 0 {
		t.Fatalf("e2e: %s in %s exited with %d:\n%s", what, dir, r.code, tailOf(r.stdout+r.stderr, 8000))
	}
}
