package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/locktui/locktui/internal/nodeproc"
)

// nodeVersion returns `node --version`, or "" when node is missing.
func nodeVersion(ctx context.Context) string {
	node, err := nodeproc.LookPath()
	if err != nil {
		return ""
	}
	out, err := exec.CommandContext(ctx, node, "--version").Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// packageVersions reads the installed versions of pkgs from dir/node_modules; missing ones are
// left out.
func packageVersions(dir string, pkgs ...string) map[string]string {
	out := map[string]string{}
	for _, pkg := range pkgs {
		data, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(pkg), "package.json"))
		if err != nil {
			continue
		}
		var meta struct {
			Version string `json:"version"`
		}
		if json.Unmarshal(data, &meta) == nil && meta.Version != "" {
			out[pkg] = meta.Version
		}
	}
	return out
}

// bridgeClientDir is the bridge client package's directory in compat/; it is not installed in
// node_modules (bench/bridge-bench.js requires it by its relative path).
const bridgeClientDir = "medusa-locking-bridge"

// localPackageVersion reads the name and version of the package in dir; "" when it is missing.
func localPackageVersion(dir string) (name, version string) {
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return "", ""
	}
	var meta struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if json.Unmarshal(data, &meta) != nil || meta.Name == "" {
		return "", ""
	}
	return meta.Name, meta.Version
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
