package cli

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/locktui/locktui/operator"
)

// completeTimeout bounds the Redis read behind one completion: a shell must not hang on a Tab.
const completeTimeout = 2 * time.Second

// completeKeys completes a command's KEY arguments with the lock keys under the namespace that
// start with what was typed (after "--", run's command is the shell's to complete).
func (s *session) completeKeys(o *options) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		// The parsed flags do not tell (cobra parses them twice): look at the line itself.
		if len(s.args) > 1 && slices.Contains(s.args[:len(s.args)-1], "--") {
			return nil, cobra.ShellCompDirectiveDefault
		}
		return s.completeLocks(c.Context(), o, func(l operator.Lock) string { return l.Key }, typed)
	}
}

// completeOwners completes --owner with the owners of the locks under the namespace.
func (s *session) completeOwners(o *options) cobra.CompletionFunc {
	return func(c *cobra.Command, _ []string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return s.completeLocks(c.Context(), o, func(l operator.Lock) string { return l.Owner }, typed)
	}
}

// completeLocks returns field of every lock that starts with typed, sorted and de-duplicated.
// A walk that completeTimeout cuts short offers what it read until then (on a large namespace
// the paced walk cannot finish in time); when Redis cannot be read at all there is nothing to
// offer, and no error: a completion that prints errors would write them into the user's
// command line.
func (s *session) completeLocks(ctx context.Context, o *options, field func(operator.Lock) string, typed string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const directive = cobra.ShellCompDirectiveNoFileComp
	if o.validateGlobal() != nil {
		return nil, directive
	}
	ctx, cancel := context.WithTimeout(ctx, completeTimeout)
	defer cancel()
	quiet := *s
	quiet.stderr = io.Discard
	c, err := quiet.connect(ctx, o)
	if err != nil {
		return nil, directive
	}
	defer c.Close()
	var out []cobra.Completion
	err = c.ops.ScanWith(ctx, s.pacedScan(s.limiter(), nil), func(batch []operator.Lock) error {
		for _, l := range batch {
			if v := field(l); !l.Foreign && v != "" && strings.HasPrefix(v, typed) {
				out = append(out, v)
			}
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		return nil, directive
	}
	slices.Sort(out)
	return slices.Compact(out), directive
}
