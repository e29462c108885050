package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/locktui/locktui/internal/flagspell"
)

// isCompletionRequest reports whether arg is cobra's hidden command that the shell completion
// scripts call; its arguments are a partial command line, left as they are.
func isCompletionRequest(arg string) bool {
	return arg == cobra.ShellCompRequestCmd || arg == cobra.ShellCompNoDescRequestCmd
}

// prepareArgs readies args for the command tree: a long flag spelled with one dash, as
// locktui accepted before it followed GNU conventions ("-redis URL", "-force"), gets its second
// dash; and a boolean flag followed by a lone "true" or "false" is refused ("release KEY --force
// false" would otherwise force-release a key called "false" too).
func prepareArgs(root *cobra.Command, args []string) ([]string, error) {
	known := map[string]*pflag.Flag{}
	var index func(c *cobra.Command)
	index = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.PersistentFlags(), c.Flags()} {
			fs.VisitAll(func(f *pflag.Flag) { known[f.Name] = f })
		}
		for _, sub := range c.Commands() {
			index(sub)
		}
	}
	index(root)
	out, bools := flagspell.Normalize(args, func(name string) *pflag.Flag { return known[name] })
	// Only the flags the command takes count as boolean; another is reported as unknown.
	cmd, _, err := root.Find(out)
	if err != nil {
		return out, nil // the execution reports it
	}
	for _, i := range bools {
		spelled := args[i]
		f := lookupFlag(cmd, strings.TrimLeft(spelled, "-"))
		if f == nil || f.NoOptDefVal == "" || i+1 >= len(args) || (args[i+1] != "true" && args[i+1] != "false") {
			continue
		}
		return nil, usagef(commandName(cmd), "%s takes no separate value (%q would be read as an argument); write %s=%s",
			spelled, args[i+1], spelled, args[i+1])
	}
	return out, nil
}

// lookupFlag finds the flag name among those c accepts: its own and the persistent flags of c
// and its parents.
func lookupFlag(c *cobra.Command, name string) *pflag.Flag {
	for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags(), c.InheritedFlags()} {
		if f := fs.Lookup(name); f != nil {
			return f
		}
	}
	return nil
}

// commandName is the command path without "locktui", for the hint of a usage error: "" for the
// root.
func commandName(c *cobra.Command) string {
	if c == nil || !c.HasParent() {
		return ""
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// flagError turns the parser's error into one line in locktui's words, with the hint to the
// command's help.
func (s *session) flagError(c *cobra.Command, err error) error {
	cmd := commandName(c)
	var (
		notExist *pflag.NotExistError
		required *pflag.ValueRequiredError
		invalid  *pflag.InvalidValueError
		syntax   *pflag.InvalidSyntaxError
	)
	switch {
	case errors.As(err, &notExist):
		if short := notExist.GetSpecifiedShortnames(); short != "" {
			return usagef(cmd, "unknown flag -%s", short)
		}
		name := notExist.GetSpecifiedName()
		if c.HasParent() && s.before(name, c.Name()) {
			if err := misplaced(name, c.Name()); err != nil {
				return err
			}
		}
		return usagef(cmd, "unknown flag --%s", name)
	case errors.As(err, &required):
		return usagef(cmd, "flag --%s needs a value", required.GetFlag().Name)
	case errors.As(err, &invalid):
		return usagef(cmd, "invalid value %q for --%s: %v", invalid.GetValue(), invalid.GetFlag().Name, errors.Unwrap(invalid))
	case errors.As(err, &syntax):
		return usagef(cmd, "bad flag syntax: %s", syntax.GetSpecifiedFlag())
	default:
		return usagef(cmd, "%s", err)
	}
}

// before reports whether the flag --name comes before the command name cmd on the command line.
func (s *session) before(name, cmd string) bool {
	flagAt := slices.IndexFunc(s.args, func(a string) bool { return a == "--"+name || strings.HasPrefix(a, "--"+name+"=") })
	cmdAt := slices.Index(s.args, cmd)
	return flagAt >= 0 && cmdAt >= 0 && flagAt < cmdAt
}

// noCommand is the root's argument check: locktui without a command opens the console, so an
// argument there is a command that does not exist.
func (s *session) noCommand(c *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	if hint := c.SuggestionsFor(args[0]); len(hint) > 0 {
		return usagef("", "unknown command %q (did you mean %q?)", args[0], hint[0])
	}
	return usagef("", "unknown command %q", args[0])
}
