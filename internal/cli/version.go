package cli

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

// unknownBuild is what version prints for a build setting the binary does not carry.
const unknownBuild = "unknown"

// buildFacts are what locktui version prints.
type buildFacts struct {
	version  string // module version; "(devel)" when the build stamped none (-buildvcs=false)
	revision string // VCS revision, with " (modified)" for a dirty work tree
	time     string // the revision's commit time
	goVer    string
}

// readBuild gathers the facts from info (nil when the binary carries none) and the version
// override.
func readBuild(info *debug.BuildInfo, override string) buildFacts {
	f := buildFacts{version: override, revision: unknownBuild, time: unknownBuild, goVer: runtime.Version()}
	if info == nil {
		f.version = cmp.Or(f.version, "(devel)")
		return f
	}
	f.version = cmp.Or(f.version, info.Main.Version, "(devel)")
	f.goVer = cmp.Or(info.GoVersion, f.goVer)
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			f.revision = cmp.Or(s.Value, unknownBuild)
		case "vcs.time":
			f.time = cmp.Or(s.Value, unknownBuild)
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if modified && f.revision != unknownBuild {
		f.revision += " (modified)"
	}
	return f
}

func runVersion(_ context.Context, s *session, _ *options, p parsedArgs) int {
	if len(p.all()) > 0 {
		return s.fail(usagef("version", "version takes no arguments, got %q", p.all()[0]))
	}
	fmt.Fprint(s.stdout, s.versionText())
	return ExitOK
}

// versionText is what locktui version and locktui --version print.
func (s *session) versionText() string {
	read := s.app.BuildInfo
	if read == nil {
		read = debug.ReadBuildInfo
	}
	info, ok := read()
	if !ok {
		info = nil
	}
	f := readBuild(info, s.app.Version)
	return fmt.Sprintf("locktui %s\nrevision: %s\ntime:     %s\ngo:       %s\n", f.version, f.revision, f.time, f.goVer)
}
