package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// report is what `loadgen report` writes as JSON: the runs as measured, the verdict per
// target of issue 10, and for a scaled run each operation as a share of the empty run.
type report struct {
	Runs     []runResult     `json:"runs"`
	Baseline string          `json:"baseline,omitempty"`
	Verdicts []verdict       `json:"verdicts,omitempty"`
	Scaled   []scaledFigures `json:"scaled,omitempty"`
}

// verdict is one target row: whether it was met and the figures that say so.
type verdict struct {
	Target string `json:"target"`
	Pass   bool   `json:"pass"`
	Known  bool   `json:"known"` // false: a figure it needs was not measured
	Text   string `json:"text"`
}

// scaledFigures compares a run on a pre-loaded database with the same run on an empty one.
type scaledFigures struct {
	Run     string             `json:"run"`
	EmptyOf string             `json:"empty_run"`
	Percent map[string]float64 `json:"percent_of_empty"` // op → throughput as % of empty
}

// scaleTolerance is the share of the empty-database throughput a scaled run may lose.
const scaleTolerance = 0.15

// peakRSSTargetKiB is the peak RSS target: 110 MiB.
const peakRSSTargetKiB = 110 * 1024

// minLoginsPerSecond is the password-login target.
const minLoginsPerSecond = 80

func reportCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadgen report", flag.ContinueOnError)
	baseline := fs.String("baseline", "", "name of the run the ratios compare with (node-oidc-provider)")
	es := fs.String("es256", "", "name of the Gatehouse run with ES256 access tokens the verdicts judge")
	rs := fs.String("rs256", "", "name of the Gatehouse run with RS256 access tokens (shown beside it)")
	var scaled []string
	fs.Func("scaled", "SCALED=EMPTY: compare the run on a pre-loaded database with the run on an empty one (repeatable)",
		func(v string) error { scaled = append(scaled, v); return nil })
	out := fs.String("json", "", "also write the report as JSON to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var rep report
	rep.Baseline = *baseline
	for _, path := range fs.Args() {
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var r runResult
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rep.Runs = append(rep.Runs, r)
	}
	if len(rep.Runs) == 0 {
		return errors.New("no run results given")
	}
	byName := map[string]*runResult{}
	for i := range rep.Runs {
		byName[rep.Runs[i].Name] = &rep.Runs[i]
	}
	for _, s := range scaled {
		big, empty, ok := strings.Cut(s, "=")
		if !ok || byName[big] == nil || byName[empty] == nil {
			return fmt.Errorf("-scaled %q: want SCALED=EMPTY naming two runs", s)
		}
		rep.Scaled = append(rep.Scaled, scaleFigures(byName[big], byName[empty]))
	}
	if *es != "" {
		rep.Verdicts = verdicts(byName[*es], byName[*rs], byName[*baseline])
	}
	writeTables(stdout, rep, byName[*baseline])
	if *out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nJSON: %s\n", *out)
	}
	return nil
}

// find returns run r's figures for op, nil when r is nil or op was not measured.
func (r *runResult) find(op string) *opResult {
	if r == nil {
		return nil
	}
	for i := range r.Ops {
		if r.Ops[i].Op == op && !r.Ops[i].Skipped && r.Ops[i].PerSecond > 0 {
			return &r.Ops[i]
		}
	}
	return nil
}

// rate returns run r's requests per second for op, or 0.
func (r *runResult) rate(op string) float64 {
	if o := r.find(op); o != nil {
		return o.PerSecond
	}
	return 0
}

// ratio formats a/b as "1.23×", or "—" when either is unknown.
func ratio(a, b float64) string {
	if a <= 0 || b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// ratioVerdict judges a throughput ratio of ours (a) to a reference (b) against want.
func ratioVerdict(target string, a, b, want float64, what string) verdict {
	v := verdict{Target: target, Known: a > 0 && b > 0}
	if !v.Known {
		v.Text = fmt.Sprintf("UNKNOWN %s: not measured (%s)", target, what)
		return v
	}
	v.Pass = a/b >= want
	v.Text = fmt.Sprintf("%s %s: %.0f/s vs %.0f/s %s = %s (target ≥ %.1f×)", passFail(v.Pass), target, a, b, what, ratio(a, b), want)
	return v
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// verdicts judges the targets of issue 10: es is Gatehouse on Postgres with ES256 access
// tokens, rs the same with RS256 (its RSS counts too), node the baseline.
func verdicts(es, rs, node *runResult) []verdict {
	vs := []verdict{
		ratioVerdict("client_credentials (ES256 access tokens) ≥ 1.0×", es.rate(opClientCredentials), node.rate(opClientCredentials), 1.0, "node's client_credentials"),
		ratioVerdict("introspection ≥ 1.0×", es.rate(opIntrospection), node.rate(opIntrospection), 1.0, "node's introspection"),
		ratioVerdict("userinfo ≥ 1.0× node's introspection", es.rate(opUserinfo), node.rate(opIntrospection), 1.0, "node's introspection"),
		ratioVerdict("code exchange, RS256 ID tokens ≥ 0.8×", es.rate(opCodeExchange), node.rate(opCodeExchange), 0.8, "node's code exchange (RS256)"),
		ratioVerdict("code exchange, ES256 ID tokens ≥ 1.0×", es.rate(opCodeExchangeES256), node.rate(opCodeExchange), 1.0, "node's code exchange (RS256)"),
		ratioVerdict("refresh, RS256 ID tokens ≥ 0.8×", es.rate(opRefresh), node.rate(opRefresh), 0.8, "node's refresh (RS256)"),
		ratioVerdict("refresh, ES256 ID tokens ≥ 1.0×", es.rate(opRefreshES256), node.rate(opRefresh), 1.0, "node's refresh (RS256)"),
		ratioVerdict("authorize with a session ≥ 2× our code exchange", es.rate(opAuthorize), es.rate(opCodeExchange), 2.0, "our code exchange"),
	}
	login := verdict{Target: "password login ≥ 80/s", Known: es.rate(opLogin) > 0}
	login.Pass = es.rate(opLogin) >= minLoginsPerSecond
	login.Text = fmt.Sprintf("%s %s: %.1f/s", passFail(login.Pass), login.Target, es.rate(opLogin))
	if !login.Known {
		login.Text = "UNKNOWN " + login.Target + ": not measured"
	}
	vs = append(vs, login)
	var peak int64
	for _, r := range []*runResult{es, rs} {
		if r != nil {
			peak = max(peak, r.PeakRSSKiB)
		}
	}
	rss := verdict{Target: "peak RSS ≤ 110 MiB", Known: peak > 0, Pass: peak > 0 && peak <= peakRSSTargetKiB}
	rss.Text = fmt.Sprintf("%s %s: %s (node-oidc-provider %s)", passFail(rss.Pass), rss.Target, mib(peak), mib(node.peak()))
	if !rss.Known {
		rss.Text = "UNKNOWN " + rss.Target + ": not measured"
	}
	return append(vs, rss)
}

func (r *runResult) peak() int64 {
	if r == nil {
		return 0
	}
	return r.PeakRSSKiB
}

// mib formats KiB as MiB, "—" for unknown.
func mib(kib int64) string {
	if kib <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f MiB", float64(kib)/1024)
}

// scaleFigures gives each operation of big as a percentage of the same in empty.
func scaleFigures(big, empty *runResult) scaledFigures {
	s := scaledFigures{Run: big.Name, EmptyOf: empty.Name, Percent: map[string]float64{}}
	for _, op := range allOps {
		if a, b := big.rate(op), empty.rate(op); a > 0 && b > 0 {
			s.Percent[op] = 100 * a / b
		}
	}
	return s
}

// cell formats a figure, "—" when unknown (negative or zero where zero means unmeasured).
func cell(format string, v float64) string {
	if v <= 0 {
		return "—"
	}
	return fmt.Sprintf(format, v)
}

// writeTables prints one table per run, the side-by-side throughput, the peak RSS of each
// server, the scaled comparisons and the verdicts.
func writeTables(w io.Writer, rep report, node *runResult) {
	fmt.Fprintln(w, "CPU ms/op is the server process's CPU time per successful request (a database server's own is not included).")
	for _, r := range rep.Runs {
		fmt.Fprintf(w, "\n== %s (%d concurrent, %.0f s per operation)\n", r.Name, r.Concurrency, r.PhaseSecs)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "operation\treq/s\tp50 ms\tp99 ms\tCPU ms/op\tvs node\terrors\tnote")
		for _, o := range r.Ops {
			if o.Skipped {
				fmt.Fprintf(tw, "%s\t—\t—\t—\t—\t—\t—\t%s\n", opTitles[o.Op], o.Note)
				continue
			}
			vs := "—"
			if node != nil && r.Name != node.Name {
				vs = ratio(o.PerSecond, node.rate(o.Op))
			}
			note := o.Note
			if o.FirstError != "" {
				note = strings.TrimSpace(note + " first error: " + o.FirstError)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f\t%.1f\t%s\t%s\t%d\t%s\n", opTitles[o.Op], cell("%.0f", o.PerSecond),
				o.P50MS, o.P99MS, cell("%.2f", o.CPUMSPerOp), vs, o.Errors, note)
		}
		tw.Flush()
		fmt.Fprintf(w, "peak RSS: %s\n", mib(r.PeakRSSKiB))
	}

	fmt.Fprintf(w, "\n== requests per second, side by side\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"operation"}
	for _, r := range rep.Runs {
		head = append(head, r.Name)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, op := range allOps {
		row := []string{opTitles[op]}
		for _, r := range rep.Runs {
			row = append(row, cell("%.0f", r.rate(op)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	row := []string{"peak RSS"}
	for _, r := range rep.Runs {
		row = append(row, mib(r.PeakRSSKiB))
	}
	fmt.Fprintln(tw, strings.Join(row, "\t"))
	tw.Flush()

	for _, s := range rep.Scaled {
		fmt.Fprintf(w, "\n== %s as %% of %s (target: within %.0f%%)\n", s.Run, s.EmptyOf, 100*scaleTolerance)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, op := range allOps {
			if p, ok := s.Percent[op]; ok {
				fmt.Fprintf(tw, "%s\t%.0f%%\t%s\n", opTitles[op], p, passFail(p >= 100*(1-scaleTolerance)))
			}
		}
		tw.Flush()
	}

	if len(rep.Verdicts) > 0 {
		fmt.Fprintf(w, "\n== verdicts (Gatehouse on Postgres vs node-oidc-provider, same run)\n")
		for _, v := range rep.Verdicts {
			fmt.Fprintln(w, v.Text)
		}
	}
}
