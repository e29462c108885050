// Package flagspell lets command lines written for Go's flag package keep working under
// spf13/pflag: there, a long flag takes two dashes ("--token"), and "-token" would be read as
// the shorthands -t -o -k -e -n.
package flagspell

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Normalize returns args with a second dash given to every long flag that is written with one
// ("-token x", "-insecure", "-listen=:1") and that lookup knows. Values of flags, everything
// after "--", shorthands ("-h") and unknown flags are left alone, so pflag reports the unknown
// ones. bools are the indexes of the boolean flags given without "=value".
func Normalize(args []string, lookup func(name string) *pflag.Flag) (out []string, bools []int) {
	out = slices.Clone(args)
	for i := 0; i < len(out); i++ {
		arg := out[i]
		if arg == "--" {
			break
		}
		if len(arg) < 2 || arg[0] != '-' {
			continue
		}
		spelled, _, hasValue := strings.Cut(arg, "=")
		f := lookup(strings.TrimPrefix(spelled[1:], "-"))
		if f == nil {
			continue
		}
		if !strings.HasPrefix(spelled, "--") {
			out[i] = "-" + arg
		}
		switch {
		case hasValue:
		case f.NoOptDefVal != "":
			bools = append(bools, i)
		default:
			i++ // the value, whatever it looks like
		}
	}
	return out, bools
}
