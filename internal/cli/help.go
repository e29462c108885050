package cli

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
)

// helpWidth is the width the flag descriptions are wrapped to.
const helpWidth = 100

const auditHelp = `Audit (the console, demo, release and release-all): every change to a lock is recorded (time,
operator user@host, action, key, owner, result, count) in --audit-log and, when given, in
--audit-stream. If the trail cannot be opened, nothing is changed (exit 1). A record that
cannot be written after the change is a warning on stderr; the exit code still tells what
happened to the locks.
`

const flagsHelp = `Flags go before or after the command and between its arguments, as --flag value or
--flag=value; -- ends the flags. Boolean flags take no separate value: --force=false, not
--force false. D is a duration such as 500ms, 30s, 5m, or seconds as a number.
`

const exitHelp = `Exit codes:
  0      success
  1      error: bad Redis URL or TLS files, Redis unreachable, Redis error, audit log unusable
  2      usage error: unknown command or flag, missing argument, bad value
  3      acquire: a key is held by another owner; release: not every key was released (not
         held, another owner's, or not a lock); get: the key does not exist
  75     run: the keys were not taken within --timeout (or were held, with --timeout 0);
         --conflict-exit-code changes it
  76     run: the lease was lost, or its renewal overdue, while the command ran
  126    run: the command could not be started
  127    run: the command was not found
  128+N  run: the command was killed by signal N; acquire --wait or run: interrupted by signal N
  other  run: the command's exit code
`

const completionHelp = `Shell completion: source the output of 'locktui completion bash' (or zsh, fish, powershell);
'locktui completion bash --help' says where to install it. Keys and owners complete from Redis.
`

// printHelp writes the help of c: the main help for the root, else the command's own.
func printHelp(w io.Writer, c *cobra.Command) {
	if !c.HasParent() {
		printMainHelp(w, c)
		return
	}
	fmt.Fprintf(w, "Usage: %s %s\n\n", c.Parent().CommandPath(), c.Use)
	if c.Long != "" {
		fmt.Fprintf(w, "%s\n", strings.TrimSpace(c.Long))
	} else {
		fmt.Fprintf(w, "%s.\n", strings.TrimSpace(c.Short))
	}
	if subs := available(c); len(subs) > 0 {
		fmt.Fprint(w, "\nCommands:\n")
		for _, sub := range subs {
			fmt.Fprintf(w, "  %-12s %s\n", sub.Name(), sub.Short)
		}
	}
	if local := c.LocalFlags(); local.HasAvailableFlags() {
		title := "Flags"
		if c.Annotations[annotationConsole] != "" {
			title = "Console flags"
		}
		fmt.Fprintf(w, "\n%s:\n%s", title, local.FlagUsagesWrapped(helpWidth))
	}
	fmt.Fprintf(w, "\nGlobal flags:\n%s", c.InheritedFlags().FlagUsagesWrapped(helpWidth))
	if c.Annotations[annotationConsole] != "" || c.Annotations[annotationAudited] != "" {
		fmt.Fprint(w, "\n"+auditHelp)
	}
	fmt.Fprint(w, "\n"+flagsHelp+"\n"+exitHelp)
}

// printMainHelp writes locktui's main help.
func printMainHelp(w io.Writer, root *cobra.Command) {
	fmt.Fprintf(w, "%s\n\nUsage:\n", root.Long)
	fmt.Fprintf(w, "  %-40s %s\n", "locktui [global flags] [console flags]", "open the interactive console")
	subs := available(root)
	for _, sub := range subs {
		if sub.Name() != "help" && sub.Name() != "completion" {
			fmt.Fprintf(w, "  locktui %s\n", sub.Use)
		}
	}
	fmt.Fprint(w, "\nCommands:\n")
	for _, sub := range subs {
		fmt.Fprintf(w, "  %-12s %s\n", sub.Name(), sub.Short)
	}
	console := root.LocalNonPersistentFlags()
	fmt.Fprintf(w, "\nConsole flags (the console and demo):\n%s", console.FlagUsagesWrapped(helpWidth))
	fmt.Fprintf(w, "\nGlobal flags:\n%s", root.PersistentFlags().FlagUsagesWrapped(helpWidth))
	fmt.Fprint(w, "\n"+auditHelp+"\n"+flagsHelp+"\n"+completionHelp+"\n"+exitHelp+"\n")
	fmt.Fprint(w, "Run 'locktui COMMAND --help' for a command's details.\n")
}

// available returns c's visible subcommands: locktui's own in the order they were added, then
// cobra's (completion, help).
func available(c *cobra.Command) []*cobra.Command {
	var own, builtin []*cobra.Command
	for _, sub := range c.Commands() {
		switch {
		case !sub.IsAvailableCommand() && sub.Name() != "help":
		case sub.Name() == "help" || sub.Name() == "completion":
			builtin = append(builtin, sub)
		default:
			own = append(own, sub)
		}
	}
	order := func(a, b *cobra.Command) int { return cmp.Compare(commandRank(a), commandRank(b)) }
	slices.SortStableFunc(own, order)
	return append(own, builtin...)
}

// commandRank is c's place in the help: the order newRoot added locktui's commands in.
func commandRank(c *cobra.Command) int {
	rank, err := strconv.Atoi(c.Annotations[annotationRank])
	if err != nil {
		return math.MaxInt
	}
	return rank
}
