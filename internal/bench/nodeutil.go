package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// nodeVersion returns `node --version`, or "" when node is missing.
func nodeVersion(ctx context.Context) string {
	node, err := exec.LookPath("node")
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

// FindCompatDir returns the compat/ directory of the repository containing dir (or one of its
// parents): the first ancestor holding go.mod and compat/package.json.
func FindCompatDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; d = filepath.Dir(d) {
		if fileExists(filepath.Join(d, "go.mod")) && fileExists(filepath.Join(d, "compat", "package.json")) {
			return filepath.Join(d, "compat"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no compat/package.json next to a go.mod in %s or its parents: run from the locktui repository or pass --compat", abs)
		}
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
