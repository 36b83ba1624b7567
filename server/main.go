package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
)

// Main runs the gatehouse command line with args (without the program name) and returns the
// process exit code: 0 on success, 1 on failure, 2 on a usage error. Data goes to stdout as
// JSON; logs and errors go to stderr. With no subcommand, or when args start with a flag,
// it serves. serve runs until ctx is done, then shuts down gracefully: pass a context that
// SIGINT and SIGTERM cancel, as examples/server does.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := &cli{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv, random: rand.Reader}
	return c.run(ctx, args)
}

// cli is one run of the command line with its collaborators, so tests can replace them.
type cli struct {
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	random         io.Reader
	// listener, when set, is what serve accepts connections on instead of listening on
	// --addr (tests pass one whose address they know before the issuer is set).
	listener net.Listener
}

// subcommand is one entry of the command table.
type subcommand struct {
	name, summary string
	run           func(c *cli, ctx context.Context, args []string) int
}

func subcommands() []subcommand {
	return []subcommand{
		{"serve", "run the provider over HTTP (the default)", (*cli).serve},
		{"migrate", "apply pending database migrations", (*cli).migrate},
		{"client create", "register an OAuth client; print it, with its secret, as JSON", (*cli).clientCreate},
		{"client list", "print every client as JSON", (*cli).clientList},
		{"client update", "change a client's settings; print it as JSON", (*cli).clientUpdate},
		{"client rotate-secret", "give a client a new secret; print it as JSON, once", (*cli).clientRotateSecret},
		{"client delete", "delete a client", (*cli).clientDelete},
		{"client registration-token create", "issue an initial access token for dynamic client registration; print it, once", (*cli).clientRegistrationTokenCreate},
		{"user create", "create a user; print it as JSON", (*cli).userCreate},
		{"user update", "change a user (the PIN gate, disabled); print it as JSON", (*cli).userUpdate},
		{"user delete", "delete a user with everything of theirs", (*cli).userDelete},
		{"keys rotate", "add a new RS256, ES256 and EdDSA signing key; print the key set as JSON", (*cli).keysRotate},
	}
}

func (c *cli) run(ctx context.Context, args []string) int {
	if len(args) == 0 || (strings.HasPrefix(args[0], "-") && !isHelp(args[0])) {
		return c.serve(ctx, args)
	}
	if isHelp(args[0]) || args[0] == "help" {
		c.usage(c.stdout, "")
		return 0
	}
	for _, sc := range subcommands() {
		words := strings.Fields(sc.name)
		if len(args) >= len(words) && slices.Equal(args[:len(words)], words) {
			return sc.run(c, ctx, args[len(words):])
		}
	}
	group := args[0]
	if c.isGroup(group) {
		if len(args) > 1 && isHelp(args[1]) {
			c.usage(c.stdout, group)
			return 0
		}
		if len(args) > 1 {
			fmt.Fprintf(c.stderr, "gatehouse: unknown command %q\n\n", group+" "+args[1])
		} else {
			fmt.Fprintf(c.stderr, "gatehouse: %s needs a subcommand\n\n", group)
		}
		c.usage(c.stderr, group)
		return 2
	}
	fmt.Fprintf(c.stderr, "gatehouse: unknown command %q\n\n", group)
	c.usage(c.stderr, "")
	return 2
}

func isHelp(arg string) bool { return arg == "-h" || arg == "-help" || arg == "--help" }

// isGroup reports whether name is the first word of a two-word subcommand.
func (c *cli) isGroup(name string) bool {
	for _, sc := range subcommands() {
		if g, _, ok := strings.Cut(sc.name, " "); ok && g == name {
			return true
		}
	}
	return false
}

// usage lists the subcommands, or those of one group.
func (c *cli) usage(w io.Writer, group string) {
	fmt.Fprintln(w, "Usage: gatehouse <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Gatehouse is an OpenID Connect provider. Commands:")
	fmt.Fprintln(w)
	for _, sc := range subcommands() {
		if group != "" && !strings.HasPrefix(sc.name, group+" ") {
			continue
		}
		fmt.Fprintf(w, "  %-15s %s\n", sc.name, sc.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, `Run "gatehouse <command> --help" for the flags of a command.`)
}

// execute parses args into cmd and calls run, mapping the outcome to an exit code: --help
// prints the usage to stdout (0); a usage error prints it to stderr (2); any other error is
// printed to stderr (1).
func (c *cli) execute(ctx context.Context, cmd *command, args []string, run func(context.Context) error) int {
	err := cmd.parse(args, c.lookupEnv)
	if errors.Is(err, flag.ErrHelp) {
		cmd.usage(c.stdout)
		return 0
	}
	if err == nil {
		err = run(ctx)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(c.stderr, "gatehouse %s: %v\n", cmd.fs.Name(), err)
	if ue := (*usageErr)(nil); errors.As(err, &ue) {
		fmt.Fprintf(c.stderr, "Run \"gatehouse %s --help\" for usage.\n", cmd.fs.Name())
		return 2
	}
	return 1
}

// printJSON writes v to stdout as indented JSON.
func (c *cli) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = c.stdout.Write(append(b, '\n'))
	return err
}
