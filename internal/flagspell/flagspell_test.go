package flagspell_test

import (
	"slices"
	"testing"

	"github.com/spf13/pflag"

	"github.com/locktui/locktui/internal/flagspell"
)

func TestNormalize(t *testing.T) {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("token", "", "")
	fs.Bool("insecure", false, "")
	for _, tt := range []struct {
		args, want []string
		bools      []int
	}{
		{[]string{"-token", "-insecure", "-insecure"}, []string{"--token", "-insecure", "--insecure"}, []int{2}},
		{[]string{"-token=x", "--insecure", "arg"}, []string{"--token=x", "--insecure", "arg"}, []int{1}},
		{[]string{"-h", "-bogus", "--", "-token"}, []string{"-h", "-bogus", "--", "-token"}, nil},
		{[]string{"-insecure=false", "-"}, []string{"--insecure=false", "-"}, nil},
	} {
		got, bools := flagspell.Normalize(tt.args, fs.Lookup)
		if !slices.Equal(got, tt.want) || !slices.Equal(bools, tt.bools) {
			t.Errorf("Normalize(%q) = %q, %v, want %q, %v", tt.args, got, bools, tt.want, tt.bools)
		}
	}
}
