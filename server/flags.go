package server

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// setting is one flag that may also be given by an environment variable. Its value is the
// flag's when the flag was given, else the variable's when it is set and not empty, else def.
type setting struct {
	name, env, def string
	isBool         bool
	given          string // the flag's value, when flagSet is true
	flagSet        bool
	// source is where resolve took the value from: "flag", "env" or "default".
	source string
	// parse stores the resolved text into its destination.
	parse func(string) error
}

func (s *setting) String() string {
	if s == nil {
		return ""
	}
	if s.flagSet {
		return s.given
	}
	return s.def
}

func (s *setting) Set(v string) error { s.given, s.flagSet = v, true; return nil }

// IsBoolFlag lets a boolean setting be given as a bare --name.
func (s *setting) IsBoolFlag() bool { return s.isBool }

// explicit reports whether the value came from a flag or a variable rather than the default.
func (s *setting) explicit() bool { return s.source == "flag" || s.source == "env" }

// command is a subcommand's flag set together with the settings that may come from the
// environment.
type command struct {
	fs       *flag.FlagSet
	out      bytes.Buffer // what the flag package prints while parsing
	synopsis string       // "gatehouse client create [flags]"
	about    string       // one paragraph shown by --help
	settings []*setting
	docs     []flagDoc // in registration order, for usage
	// resolvers run once every setting is resolved (secretVar reads its files there).
	resolvers []func() error
}

// flagDoc describes one flag in the usage text.
type flagDoc struct {
	name, arg, help, env, def string
}

func newCommand(name, synopsis, about string) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError), synopsis: synopsis, about: about}
	c.fs.SetOutput(&c.out)
	c.fs.Usage = func() {}
	return c
}

// usage writes the synopsis, the description and every flag with its variable and default.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n%s\n", c.synopsis, c.about)
	if len(c.docs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nFlags:\n")
	for _, d := range c.docs {
		fmt.Fprintf(w, "  --%s", d.name)
		if d.arg != "" {
			fmt.Fprintf(w, " %s", d.arg)
		}
		fmt.Fprintf(w, "\n      %s", d.help)
		var notes []string
		if d.env != "" {
			notes = append(notes, "env "+d.env)
		}
		if d.def != "" {
			notes = append(notes, "default "+strconv.Quote(d.def))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, " (%s)", strings.Join(notes, ", "))
		}
		fmt.Fprintln(w)
	}
}

// parse parses args and resolves every setting against lookupEnv. It returns flag.ErrHelp
// when help was asked for, and a usage error for bad flags, stray arguments or bad values.
func (c *command) parse(args []string, lookupEnv func(string) (string, bool)) error {
	if err := c.fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return usageError("%v", err)
	}
	if c.fs.NArg() > 0 {
		return usageError("unexpected argument %q", c.fs.Arg(0))
	}
	for _, s := range c.settings {
		v, src := s.def, "default"
		if s.env != "" {
			if e, ok := lookupEnv(s.env); ok && e != "" {
				v, src = e, "env"
			}
		}
		if s.flagSet {
			v, src = s.given, "flag"
		}
		s.source = src
		if err := s.parse(v); err != nil {
			where := "--" + s.name
			if src == "env" {
				where = s.env
			}
			return usageError("invalid value %q for %s: %v", v, where, err)
		}
	}
	for _, resolve := range c.resolvers {
		if err := resolve(); err != nil {
			return err
		}
	}
	return nil
}

// add registers a setting as a flag. arg names the flag's value in the usage text ("" for
// a boolean flag).
func (c *command) add(name, arg, env, def, help string, parse func(string) error) *setting {
	s := &setting{name: name, env: env, def: def, isBool: arg == "", parse: parse}
	c.fs.Var(s, name, help)
	c.settings = append(c.settings, s)
	c.docs = append(c.docs, flagDoc{name: name, arg: arg, help: help, env: env, def: def})
	return s
}

func (c *command) stringVar(p *string, name, arg, env, def, help string) *setting {
	return c.add(name, arg, env, def, help, func(v string) error { *p = v; return nil })
}

func (c *command) boolVar(p *bool, name, env string, def bool, help string) *setting {
	text := ""
	if def {
		text = "true"
	}
	return c.add(name, "", env, text, help, func(v string) error {
		if v == "" {
			*p = false
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return errors.New("want true or false")
		}
		*p = b
		return nil
	})
}

func (c *command) durationVar(p *time.Duration, name, env string, def time.Duration, help string) *setting {
	return c.add(name, "DURATION", env, durationText(def), help, func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return errors.New("want a Go duration such as 90s, 15m or 720h")
		}
		*p = d
		return nil
	})
}

// intVar registers a whole number ≥ 0 whose default, 0, the help text explains.
func (c *command) intVar(p *int, name, env, help string) *setting {
	return c.add(name, "N", env, "0", help, func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("want a whole number, 0 or more")
		}
		*p = n
		return nil
	})
}

// durationText writes d as the shortest Go duration that parses back to it: "10m", "1h",
// "720h" rather than time.Duration.String's "10m0s", "1h0m0s", "720h0m0s".
func durationText(d time.Duration) string {
	text := d.String()
	if t, ok := strings.CutSuffix(text, "m0s"); ok {
		text = t + "m"
	}
	if t, ok := strings.CutSuffix(text, "h0m"); ok {
		text = t + "h"
	}
	return text
}

// secretVar registers a secret as two settings, --NAME VALUE and --NAME-file PATH (with the
// variables env and env_FILE when env is not empty), so the secret can stay out of the
// process list and the environment. Once parsed, *p holds the value, or the file's content
// without one trailing newline; giving both is a usage error. It returns the value's
// setting.
func (c *command) secretVar(p *string, name, arg, env, help string) *setting {
	value := c.stringVar(p, name, arg, env, "", help)
	fileEnv := ""
	if env != "" {
		fileEnv = env + "_FILE"
	}
	var path string
	c.stringVar(&path, name+"-file", "PATH", fileEnv, "", "file holding --"+name+", instead of giving it on the command line")
	c.resolvers = append(c.resolvers, func() error {
		if path == "" {
			return nil
		}
		if *p != "" {
			return usageError("give --%s or --%s-file (or their variables), not both", name, name)
		}
		secret, err := readSecretFile(path)
		if err != nil {
			return usageError("--%s-file: %v", name, err)
		}
		*p = secret
		return nil
	})
	return value
}

// readSecretFile returns the content of the file at path without one trailing newline
// ("\n" or "\r\n", as editors and `echo` leave). An empty secret is an error: it would
// otherwise pass for "none given".
func readSecretFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	text := string(b)
	if t, ok := strings.CutSuffix(text, "\n"); ok {
		text = strings.TrimSuffix(t, "\r")
	}
	if text == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return text, nil
}

// oneOfVar accepts one of choices, compared case-insensitively and stored as spelled in
// choices.
func (c *command) oneOfVar(p *string, name, env, def string, choices []string, help string) *setting {
	return c.add(name, strings.Join(choices, "|"), env, def, help, func(v string) error {
		for _, ch := range choices {
			if strings.EqualFold(v, ch) {
				*p = ch
				return nil
			}
		}
		return fmt.Errorf("want one of %s", strings.Join(choices, ", "))
	})
}

func (c *command) levelVar(p *slog.Level, name, env string, def slog.Level, help string) *setting {
	return c.add(name, "LEVEL", env, strings.ToLower(def.String()), help, func(v string) error {
		switch strings.ToLower(v) {
		case "debug":
			*p = slog.LevelDebug
		case "info":
			*p = slog.LevelInfo
		case "warn", "warning":
			*p = slog.LevelWarn
		case "error":
			*p = slog.LevelError
		default:
			return errors.New("want debug, info, warn or error")
		}
		return nil
	})
}

// str registers a flag that has no variable.
func (c *command) str(p *string, name, arg, def, help string) {
	c.fs.StringVar(p, name, def, help)
	c.docs = append(c.docs, flagDoc{name: name, arg: arg, help: help, def: def})
}

// given reports whether the flag name was on the command line (parse has run).
func (c *command) given(name string) bool {
	found := false
	c.fs.Visit(func(f *flag.Flag) { found = found || f.Name == name })
	return found
}

// flag registers a boolean flag that has no variable.
func (c *command) flag(p *bool, name, help string) {
	c.fs.BoolVar(p, name, false, help)
	c.docs = append(c.docs, flagDoc{name: name, help: help})
}

// listVar registers a repeatable flag that has no variable.
func (c *command) listVar(p *[]string, name, arg, help string) {
	help += " (repeatable)"
	c.fs.Func(name, help, func(v string) error {
		*p = append(*p, v)
		return nil
	})
	c.docs = append(c.docs, flagDoc{name: name, arg: arg, help: help})
}
