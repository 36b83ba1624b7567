package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"
)

// runResult is what `loadgen run` writes: one target's figures for every operation.
type runResult struct {
	Name        string     `json:"name"`
	Concurrency int        `json:"concurrency"`
	PhaseSecs   float64    `json:"phase_seconds"`
	PeakRSSKiB  int64      `json:"peak_rss_kib"` // VmHWM of the server process; 0 when unknown
	Ops         []opResult `json:"ops"`
}

// opResult is one operation's figures. PerSecond counts successful requests only.
type opResult struct {
	Op         string  `json:"op"`
	Requests   int     `json:"requests"`
	Errors     int     `json:"errors"`
	Seconds    float64 `json:"seconds"`
	PerSecond  float64 `json:"per_second"`
	P50MS      float64 `json:"p50_ms"`
	P99MS      float64 `json:"p99_ms"`
	CPUMSPerOp float64 `json:"cpu_ms_per_op"` // server CPU per successful request; -1 unknown
	Exhausted  bool    `json:"pool_exhausted,omitempty"`
	Skipped    bool    `json:"skipped,omitempty"`
	Note       string  `json:"note,omitempty"`
	FirstError string  `json:"first_error,omitempty"`
}

// runConfig is the `run` command's flags beyond the target.
type runConfig struct {
	name        string
	concurrency int
	duration    time.Duration
	warmup      time.Duration
	pid         int
	ops         []string
	skip        map[string]string // op → why the provider has no comparable form of it
	profileOp   string
	profileURL  string
	profileOut  string
	profileSecs int
}

// skipFlag collects -skip op=reason.
type skipFlag map[string]string

func (s skipFlag) String() string { return "" }
func (s skipFlag) Set(v string) error {
	op, why, ok := strings.Cut(v, "=")
	if !ok || !slices.Contains(allOps, op) {
		return fmt.Errorf("want OP=REASON with OP one of %s", strings.Join(allOps, ", "))
	}
	s[op] = why
	return nil
}

func runCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadgen run", flag.ContinueOnError)
	var t target
	cfg := runConfig{skip: skipFlag{}}
	fs.StringVar(&cfg.name, "name", "target", "name of this run in the report")
	fs.StringVar(&t.issuer, "issuer", "", "issuer URL; endpoints come from its discovery document (required)")
	fs.StringVar(&t.code.id, "client-id", "", "authorization-code client (RS256 ID tokens) (required)")
	fs.StringVar(&t.code.secret, "client-secret", "", "its secret (required)")
	fs.StringVar(&t.codeES256.id, "es256-client-id", "", "authorization-code client with ES256 ID tokens; none: those operations are skipped")
	fs.StringVar(&t.codeES256.secret, "es256-client-secret", "", "its secret")
	fs.StringVar(&t.cc.id, "cc-client-id", "", "client_credentials client (required)")
	fs.StringVar(&t.cc.secret, "cc-client-secret", "", "its secret (required)")
	fs.StringVar(&t.ccScope, "cc-scope", "", "scope of the client_credentials grants")
	fs.StringVar(&t.redirectURI, "redirect-uri", "", "redirect URI of the code clients (required; never called)")
	fs.StringVar(&t.scope, "scope", "openid profile email offline_access", "scope of the authorization requests")
	fs.StringVar(&t.resource, "resource", "", "RFC 8707 resource of authorization and token requests")
	fs.StringVar(&t.loginURL, "login-url", "", "password-login API (JSON email, password; sets a session cookie); none: login is skipped and a session starts through the provider's interaction")
	fs.StringVar(&t.sessionURL, "session-url", "", "session-check API (GET with the session cookie, answers {isValid}); none: skipped")
	fs.StringVar(&t.email, "email", "", "the user's email, for the login API")
	fs.StringVar(&t.password, "password", "", "the user's password, for the login API")
	fs.StringVar(&t.introspect, "introspect-token", "access", "token introspection asks about: access or refresh")
	fs.IntVar(&cfg.concurrency, "c", 16, "concurrent requests")
	fs.DurationVar(&cfg.duration, "d", 5*time.Second, "measured time per operation")
	fs.DurationVar(&cfg.warmup, "warmup", time.Second, "unmeasured time before each operation")
	fs.IntVar(&cfg.pid, "pid", 0, "server process id, for CPU per operation and peak RSS from /proc (0: not measured)")
	ops := fs.String("ops", strings.Join(allOps, ","), "operations to run, comma-separated")
	fs.Var(skipFlag(cfg.skip), "skip", "OP=REASON: the provider has no comparable form of OP (repeatable)")
	fs.StringVar(&cfg.profileOp, "profile-op", "", "capture a CPU profile of the server during this operation")
	fs.StringVar(&cfg.profileURL, "profile-url", "", "the server's pprof base URL, e.g. http://127.0.0.1:6060")
	fs.StringVar(&cfg.profileOut, "profile-out", "cpu.pprof", "where the CPU profile is written")
	fs.IntVar(&cfg.profileSecs, "profile-seconds", 10, "length of the CPU profile; the operation runs at least this long")
	out := fs.String("out", "", "write the JSON result here (default: stdout)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if t.issuer == "" || t.code.id == "" || t.cc.id == "" || t.redirectURI == "" {
		return errors.New("-issuer, -client-id, -cc-client-id and -redirect-uri are required")
	}
	if t.introspect != "access" && t.introspect != "refresh" {
		return errors.New("-introspect-token must be access or refresh")
	}
	if cfg.concurrency < 1 || cfg.duration <= 0 || cfg.warmup < 0 {
		return errors.New("-c must be at least 1, -d positive, -warmup not negative")
	}
	cfg.ops = strings.Split(*ops, ",")
	for _, op := range cfg.ops {
		if !slices.Contains(allOps, op) {
			return fmt.Errorf("unknown operation %q; want some of %s", op, strings.Join(allOps, ", "))
		}
	}
	if cfg.profileOp != "" && cfg.profileURL == "" {
		return errors.New("-profile-op needs -profile-url")
	}
	ctx := context.Background()
	tg, err := newTarget(ctx, t, cfg.concurrency)
	if err != nil {
		return err
	}
	res, err := measureAll(ctx, tg, cfg, os.Stderr)
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	b = append(b, '\n')
	if *out == "" {
		_, err = stdout.Write(b)
		return err
	}
	return os.WriteFile(*out, b, 0o644)
}

// runState carries what one phase produces for later ones.
type runState struct {
	codes, codesES256   pool[codeGrant]
	tokens, tokensES256 pool[tokens]
	revocable           pool[owned] // refresh tokens nobody else uses
	chains, chainsES256 []tokens    // one refresh chain per worker
	held                []tokens    // one token response per worker for introspection and userinfo
}

// owned is a token with (a way to find) the client it was issued to.
type owned struct {
	owner func(*target) client
	token string
}

// measureAll runs every configured operation in order and collects the figures. progress
// gets one line per operation.
func measureAll(ctx context.Context, t *target, cfg runConfig, progress io.Writer) (runResult, error) {
	res := runResult{Name: cfg.name, Concurrency: cfg.concurrency, PhaseSecs: cfg.duration.Seconds()}
	st := &runState{}
	want := func(op string) bool { return slices.Contains(cfg.ops, op) }
	needSession := want(opSession) || want(opAuthorize) || want(opCodeExchange) || want(opAuthorizeES256)
	if needSession {
		if err := t.startSession(ctx); err != nil {
			return res, fmt.Errorf("start a session: %w", err)
		}
	}
	n := cfg.concurrency
	for _, op := range allOps {
		if !want(op) {
			continue
		}
		if why, ok := cfg.skip[op]; ok {
			res.Ops = append(res.Ops, opResult{Op: op, Skipped: true, Note: why, CPUMSPerOp: -1})
			continue
		}
		if (op == opAuthorizeES256 || op == opCodeExchangeES256 || op == opRefreshES256) && t.codeES256.id == "" {
			res.Ops = append(res.Ops, opResult{Op: op, Skipped: true, Note: "no ES256 ID-token client given", CPUMSPerOp: -1})
			continue
		}
		if op == opLogin && t.loginURL == "" {
			res.Ops = append(res.Ops, opResult{Op: op, Skipped: true, Note: "login is an interaction of the provider's pages, not an API", CPUMSPerOp: -1})
			continue
		}
		if op == opSession && t.sessionURL == "" {
			res.Ops = append(res.Ops, opResult{Op: op, Skipped: true, Note: "no session-check API", CPUMSPerOp: -1})
			continue
		}
		if err := st.prepare(op, n); err != nil {
			return res, fmt.Errorf("%s: %w", op, err)
		}
		request := st.request(t, op)
		if op == opAuthorize || op == opAuthorizeES256 {
			// One authorization alone first: a provider that asks for consent once per client
			// (its interaction grants it) must not see concurrent first requests race for it.
			if err := request(ctx, 0); err != nil {
				return res, fmt.Errorf("%s: %w", op, err)
			}
		}
		if _, err := drive(n, cfg.warmup, false, request); err != nil {
			return res, fmt.Errorf("%s warm-up: %w", op, err)
		}
		d := cfg.duration
		var profileDone chan error
		if op == cfg.profileOp {
			d = max(d, time.Duration(cfg.profileSecs)*time.Second+time.Second)
			profileDone = make(chan error, 1)
			go func() { profileDone <- captureProfile(cfg.profileURL, cfg.profileSecs, cfg.profileOut) }()
		}
		before, cpuErr := procCPUTicks(cfg.pid)
		stats, _ := drive(n, d, true, request)
		after, cpuErr2 := procCPUTicks(cfg.pid)
		ticks := after - before
		if cfg.pid == 0 || cpuErr != nil || cpuErr2 != nil {
			ticks = -1
		}
		r := summarize(op, stats, ticks)
		if r.Exhausted {
			r.Note = fmt.Sprintf("ran out of what the earlier phase produced after %.1fs", r.Seconds)
		}
		if op == opIntrospection {
			r.Note = strings.TrimSpace(r.Note + " " + t.introspect + " token")
		}
		if profileDone != nil {
			if err := <-profileDone; err != nil {
				return res, fmt.Errorf("profile: %w", err)
			}
			fmt.Fprintf(progress, "loadgen: CPU profile of %s written to %s\n", op, cfg.profileOut)
		}
		res.Ops = append(res.Ops, r)
		fmt.Fprintf(progress, "loadgen: %-8s %-20s %8.0f/s  p50 %6.1f ms  p99 %6.1f ms  errors %d\n", cfg.name, op, r.PerSecond, r.P50MS, r.P99MS, r.Errors)
	}
	if cfg.pid != 0 {
		if kib, err := procPeakRSSKiB(cfg.pid); err == nil {
			res.PeakRSSKiB = kib
		}
	}
	return res, nil
}

// prepare hands out what op needs from earlier phases before it starts.
func (st *runState) prepare(op string, n int) error {
	var err error
	switch op {
	case opRefresh:
		st.chains, err = st.tokens.takeN(n)
	case opRefreshES256:
		st.chainsES256, err = st.tokensES256.takeN(n)
	case opIntrospection, opUserinfo:
		if st.held == nil {
			st.held, err = st.tokens.takeN(n)
		}
	case opRevocation:
		for _, p := range []struct {
			from  *pool[tokens]
			owner func(*target) client
		}{{&st.tokens, func(t *target) client { return t.code }}, {&st.tokensES256, func(t *target) client { return t.codeES256 }}} {
			for tok, ok := p.from.take(); ok; tok, ok = p.from.take() {
				st.revocable.put(owned{owner: p.owner, token: tok.RefreshToken})
			}
		}
		if st.revocable.len() < n {
			err = fmt.Errorf("%d refresh tokens left from the code exchanges, want at least %d", st.revocable.len(), n)
		}
	}
	if err != nil && (op == opRefresh || op == opRefreshES256 || op == opIntrospection || op == opUserinfo) {
		return fmt.Errorf("too few token responses from the code exchange (run it first): %w", err)
	}
	return err
}

// request returns the request function of op.
func (st *runState) request(t *target, op string) func(context.Context, int) error {
	authorize := func(c client, into *pool[codeGrant]) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			g, err := t.authorize(ctx, c)
			if err == nil {
				into.put(g)
			}
			return err
		}
	}
	exchange := func(c client, from *pool[codeGrant], into *pool[tokens]) func(context.Context, int) error {
		return func(ctx context.Context, _ int) error {
			g, ok := from.take()
			if !ok {
				return errPoolEmpty
			}
			tok, err := t.exchange(ctx, c, g)
			if err == nil {
				into.put(tok)
			}
			return err
		}
	}
	refresh := func(c client, chains []tokens) func(context.Context, int) error {
		return func(ctx context.Context, w int) error {
			tok, err := t.refresh(ctx, c, chains[w].RefreshToken)
			if err == nil {
				chains[w] = tok
			}
			return err
		}
	}
	switch op {
	case opLogin:
		return func(ctx context.Context, _ int) error { _, err := t.login(ctx); return err }
	case opSession:
		return func(ctx context.Context, _ int) error { return t.sessionCheck(ctx) }
	case opAuthorize:
		return authorize(t.code, &st.codes)
	case opAuthorizeES256:
		return authorize(t.codeES256, &st.codesES256)
	case opCodeExchange:
		return exchange(t.code, &st.codes, &st.tokens)
	case opCodeExchangeES256:
		return exchange(t.codeES256, &st.codesES256, &st.tokensES256)
	case opRefresh:
		return refresh(t.code, st.chains)
	case opRefreshES256:
		return refresh(t.codeES256, st.chainsES256)
	case opClientCredentials:
		return func(ctx context.Context, _ int) error { return t.clientCredentials(ctx) }
	case opIntrospection:
		return func(ctx context.Context, w int) error {
			tok := st.held[w].AccessToken
			if t.introspect == "refresh" {
				tok = st.held[w].RefreshToken
			}
			return t.introspectToken(ctx, tok)
		}
	case opUserinfo:
		return func(ctx context.Context, w int) error { return t.userinfo(ctx, st.held[w].AccessToken) }
	case opRevocation:
		return func(ctx context.Context, _ int) error {
			rt, ok := st.revocable.take()
			if !ok {
				return errPoolEmpty
			}
			return t.revoke(ctx, rt.owner(t), rt.token)
		}
	}
	panic("unknown operation " + op)
}

// captureProfile fetches a CPU profile of seconds from the pprof server at base into path.
func captureProfile(base string, seconds int, path string) error {
	hc := &http.Client{Timeout: time.Duration(seconds+30) * time.Second}
	resp, err := hc.Get(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", strings.TrimRight(base, "/"), seconds))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
