package server

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// flagRow is one flag as documented: its variable and default, whether it takes no value
// (a boolean flag, from serve --help) and whether the default is prose (README).
type flagRow struct {
	env, def       string
	boolean, prose bool
}

// helpNotes are the notes usage appends to a flag's help: "(env X, default "Y")".
var helpNotes = regexp.MustCompile(`\((?:env (\S+?))?(?:, )?(?:default ("(?:[^"\\]|\\.)*"))?\)$`)

// README cells: one `--flag`, and a leading code span.
var (
	flagCell = regexp.MustCompile("^`--([a-z0-9-]+)`$")
	code     = regexp.MustCompile("^`([^`]*)`")
)

// serveHelpFlags parses `serve --help` into its flags.
func serveHelpFlags(t *testing.T) map[string]flagRow {
	t.Helper()
	code, stdout, stderr := runMain(t, nil, "serve", "--help")
	if code != 0 {
		t.Fatalf("serve --help exited %d: %s", code, stderr)
	}
	flags := map[string]flagRow{}
	var name, block string
	var boolean bool
	done := func() {
		if name == "" {
			return
		}
		row := flagRow{boolean: boolean}
		if m := helpNotes.FindStringSubmatch(block); m != nil && (m[1] != "" || m[2] != "") {
			row.env = m[1]
			if m[2] != "" {
				def, err := strconv.Unquote(m[2])
				if err != nil {
					t.Fatalf("--%s: default %s: %v", name, m[2], err)
				}
				row.def = def
			}
		}
		flags[name] = row
	}
	for _, line := range strings.Split(stdout, "\n") {
		if rest, ok := strings.CutPrefix(line, "  --"); ok {
			done()
			fields := strings.Fields(rest)
			name, block, boolean = fields[0], "", len(fields) == 1
			continue
		}
		if name != "" {
			block = strings.TrimSpace(block + " " + strings.TrimSpace(line))
		}
	}
	done()
	if len(flags) == 0 {
		t.Fatalf("no flags in serve --help:\n%s", stdout)
	}
	return flags
}

// readmeFlags parses the configuration table of README.md: one row per flag, its first
// three cells the flag, the variable and the default, each in backticks; a default in
// prose ("none", "see below") stands for a computed or absent one.
func readmeFlags(t *testing.T) map[string]flagRow {
	t.Helper()
	text, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(text)
	if _, after, ok := strings.Cut(section, "\n## Configuration\n"); ok {
		section, _, _ = strings.Cut(after, "\n## ")
	} else {
		t.Fatal("README.md has no Configuration section")
	}
	rows := map[string]flagRow{}
	for _, line := range strings.Split(section, "\n") {
		if !strings.HasPrefix(line, "| `--") {
			continue
		}
		cells := strings.SplitN(line, "|", 5)
		if len(cells) < 5 {
			t.Errorf("README configuration row has too few cells: %s", line)
			continue
		}
		flag, env, def := strings.TrimSpace(cells[1]), strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3])
		m := flagCell.FindStringSubmatch(flag)
		if m == nil {
			t.Errorf("README configuration row names %s, want exactly one `--flag`", flag)
			continue
		}
		var row flagRow
		if e := code.FindStringSubmatch(env); e != nil {
			row.env = e[1]
		}
		// A default wholly in backticks is a literal; anything else is prose.
		if d := code.FindStringSubmatch(def); d != nil && d[0] == def {
			row.def = d[1]
		} else {
			row.def, row.prose = def, true
		}
		if _, dup := rows[m[1]]; dup {
			t.Errorf("README configuration table lists --%s twice", m[1])
		}
		rows[m[1]] = row
	}
	return rows
}

// TestREADMEConfigurationTableMatchesServeHelp: the README's table lists every serve flag
// with the variable and default `serve --help` prints, and no flag serve does not have.
func TestREADMEConfigurationTableMatchesServeHelp(t *testing.T) {
	help, readme := serveHelpFlags(t), readmeFlags(t)
	for name, h := range help {
		r, ok := readme[name]
		if !ok {
			t.Errorf("README configuration table lacks --%s (env %s, default %q)", name, h.env, h.def)
			continue
		}
		if r.env != h.env {
			t.Errorf("--%s: README names variable %q, serve --help %q", name, r.env, h.env)
		}
		switch {
		case h.def != "" && (r.prose || r.def != h.def):
			t.Errorf("--%s: README default %q, serve --help default %q", name, r.def, h.def)
		case h.def == "" && !r.prose && !(h.boolean && r.def == "false"):
			t.Errorf("--%s: README default `%s`, serve --help has none (want prose such as none)", name, r.def)
		}
	}
	for name := range readme {
		if _, ok := help[name]; !ok {
			t.Errorf("README configuration table lists --%s, which serve does not have", name)
		}
	}
}
