package main_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// modulePath is the import path of this module: what the layers below are relative to.
const modulePath = "github.com/locktui/locktui/"

// layers are the packages locktui is built from, bottom first (patterns of path.Match). A
// package imports packages of its own layer and of the layers below it, never of a layer above.
// The packages of a layer that is apart import none of each other, nor any package under
// another's path: the CLI imports no tui/... package, a page no other page. A package of this
// module that no layer names is a helper at the bottom: it imports only other helpers.
var layers = []struct {
	pkgs  []string
	apart bool
}{
	{pkgs: []string{"internal/lockwire", "redisconn"}},
	{pkgs: []string{"provider"}},
	{pkgs: []string{"operator", "audit", "events"}},
	{pkgs: []string{"tui/common", "tui/source", "tui/store"}},
	{pkgs: []string{"tui/components/*"}},
	{pkgs: []string{"tui/pages/*"}, apart: true},
	{pkgs: []string{"internal/cli", "internal/demo", "tui"}, apart: true},
	{pkgs: []string{"internal/console"}},
	{pkgs: []string{"cmd/locktui"}},
}

// layerOf returns the layer of pkg (a path inside the module), counted from 1; 0 for a helper.
func layerOf(pkg string) int {
	for i, l := range layers {
		for _, pattern := range l.pkgs {
			if ok, _ := path.Match(pattern, pkg); ok {
				return i + 1
			}
		}
	}
	return 0
}

// No package locktui is built from imports one above it (go list: imports of the packages, not
// of their tests).
func TestNoUpwardImports(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], modulePath)
		if !ok {
			continue
		}
		checked++
		from := layerOf(pkg)
		for _, imp := range fields[1:] {
			imp, ok := strings.CutPrefix(imp, modulePath)
			if !ok {
				continue
			}
			switch to := layerOf(imp); {
			case to > from:
				t.Errorf("%s imports %s, a layer above it", pkg, imp)
			case to == from && from > 0 && layers[from-1].apart:
				t.Errorf("%s imports %s, of its own layer, whose packages import none of each other", pkg, imp)
			case from > 0 && layers[from-1].apart:
				for _, other := range layers[from-1].pkgs {
					if other != pkg && strings.HasPrefix(imp, other+"/") {
						t.Errorf("%s imports %s, under %s of its own layer, whose packages import none of each other", pkg, imp, other)
					}
				}
			}
		}
	}
	if checked < len(layers) {
		t.Fatalf("go list named %d packages of the module, want at least %d:\n%s", checked, len(layers), out)
	}
}
