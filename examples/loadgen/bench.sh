#!/usr/bin/env bash
# `make bench`: Gatehouse on Postgres and on SQLite (ES256 and RS256 access tokens each),
# then node-oidc-provider (pinned below, installed from npm into a temporary folder, in
# memory, configured as Gatehouse is: see node-oidc-provider.mjs), all measured by the same
# driver (loadgen run) operation by operation, then printed side by side with a verdict per
# target of issue 10 (loadgen report), and written as JSON.
#
# Environment (every knob has a default):
#   BENCH_SECONDS=5         measured seconds per operation
#   BENCH_CONCURRENCY=16    concurrent clients
#   BENCH_WARMUP=1s         unmeasured warm-up per operation
#   BENCH_RUNS="pg-ES256 pg-RS256 sqlite-ES256 sqlite-RS256 node"   what to run
#   BENCH_OPS               the operations to measure, comma-separated (loadgen run -ops;
#                           default all), e.g. BENCH_OPS=login for password login alone
#   BENCH_POSTGRES_DSN      server where a fresh database is created per run and dropped
#                           afterwards (default $GATEHOUSE_TEST_POSTGRES_DSN, else
#                           postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable)
#   BENCH_JSON              where the JSON report goes (default a new file in $TMPDIR)
#   BENCH_GOMEMLIMIT=76MiB  Go's soft memory limit for the Gatehouse servers ("off": none)
#   BENCH_LDFLAGS=-linkmode=internal   go build -ldflags of the Gatehouse server
#   BENCH_TAGS              go build -tags of the Gatehouse server (gatehouse_native_argon2:
#                           the opt-in native argon2id fill)
#   BENCH_PROFILE=1         capture a CPU profile (BENCH_PROFILE_SECONDS=10) of Gatehouse on
#                           Postgres with ES256 during BENCH_PROFILE_OP (client_credentials)
#                           through --debug-addr, and print the head of `go tool pprof -top`
#   BENCH_SCALE=1           also run Gatehouse on Postgres (ES256) on a database pre-loaded
#                           with BENCH_SCALE_USERS=100000 users and
#                           BENCH_SCALE_REFRESH_TOKENS=1000000 refresh tokens and
#                           BENCH_SCALE_REVOCATION_RULES=200000 revocation rules (scale.sh), the
#                           janitor every BENCH_SCALE_JANITOR=15s; prints each operation as %
#                           of the empty database and the table sizes before and after
# Password login is measured with the per-IP limit and the lockout off (--login-rate-limit
# off --lockout off), so it measures hashing, not the limits.
set -euo pipefail
cd "$(dirname "$0")/../.."
here=examples/loadgen
seconds=${BENCH_SECONDS:-5}
concurrency=${BENCH_CONCURRENCY:-16}
warmup=${BENCH_WARMUP:-1s}
runs=${BENCH_RUNS:-pg-ES256 pg-RS256 sqlite-ES256 sqlite-RS256 node}
ops=()
if [ -n "${BENCH_OPS:-}" ]; then ops=(-ops "$BENCH_OPS"); fi
pg_base=${BENCH_POSTGRES_DSN:-${GATEHOUSE_TEST_POSTGRES_DSN:-postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable}}
profile_op=${BENCH_PROFILE_OP:-client_credentials}
# Go's soft memory limit for the Gatehouse servers (README, "Performance"): the garbage of
# argon2id hashing (19 MiB a hash) is collected before the heap doubles. "off" runs without.
gomemlimit=${BENCH_GOMEMLIMIT:-76MiB}
# GOGC for the Gatehouse servers: with a memory limit, a higher GOGC lets the small heap of
# the token endpoints grow toward the limit before a collection, instead of doubling.
gogc=${BENCH_GOGC:-off}
profile_seconds=${BENCH_PROFILE_SECONDS:-10}
# How the Gatehouse server is linked, as `make server` links it. The default build has no cgo
# of ours and links internally anyway; a build with BENCH_TAGS=gatehouse_native_argon2 (the
# opt-in native argon2id fill, cgo) would otherwise link externally, and that binary keeps
# about 14 MiB more of itself resident (README, "Performance"). BENCH_LDFLAGS= measures the
# go tool's choice instead.
ldflags=${BENCH_LDFLAGS--linkmode=internal}
# Build tags of the Gatehouse server: gatehouse_native_argon2 measures the native fill.
tags=${BENCH_TAGS:-}
json=${BENCH_JSON:-${TMPDIR:-/tmp}/gatehouse-bench-$(date -u +%Y%m%dT%H%M%SZ).json}
node_version=9.13.3 # oidc-provider, pinned: the comparison must not move under us
redirect_uri=http://127.0.0.1:9/callback # never called: the driver reads the code from the redirect
email=bench@example.com
password='correct horse battery staple'
started=$(date +%s)

work=$(mktemp -d)
server_pid=""
databases=()
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	for db in "${databases[@]}"; do
		psql -q "$pg_base" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || echo "could not drop database $db" >&2
	done
	rm -rf "$work"
}
trap cleanup EXIT
# shellcheck source=examples/loadgen/scale.sh
. "$here/scale.sh"

random_hex() { head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_ready URL LOG waits up to 20 s for URL to answer, else prints LOG and fails.
wait_ready() {
	for _ in $(seq 1 200); do
		curl -sf "$1" >/dev/null && return 0
		sleep 0.1
	done
	echo "no answer from $1:" >&2
	cat "$2" >&2
	exit 1
}

# stop_server ends the server started last.
stop_server() {
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# pg_database NAME creates database NAME (lower case) on the Postgres server, to be dropped
# at exit, and sets dsn to its DSN.
pg_database() {
	psql -q -v ON_ERROR_STOP=1 "$pg_base" -c "CREATE DATABASE $1" >/dev/null
	databases+=("$1")
	local prefix=${pg_base%%\?*}
	dsn="${prefix%/*}/$1${pg_base#"$prefix"}"
}

go build -tags="$tags" -ldflags="$ldflags" -o "$work/gatehouse" ./examples/server
go build -o "$work/loadgen" ./examples/loadgen
secret=$(random_hex)
rp_secret=$(random_hex)
svc_secret=$(random_hex)

# gatehouse_setup DSN registers the clients and the user the driver uses.
gatehouse_setup() {
	local admin=("$work/gatehouse" --dsn "$1" --secret "$secret")
	{
		"${admin[0]}" client create "${admin[@]:1}" --id rp --client-secret "$rp_secret" --auth-method client_secret_post --first-party --redirect-uri "$redirect_uri"
		"${admin[0]}" client create "${admin[@]:1}" --id rp-es256 --client-secret "$rp_secret" --auth-method client_secret_post --first-party --redirect-uri "$redirect_uri" --id-token-alg ES256
		"${admin[0]}" client create "${admin[@]:1}" --id svc --client-secret "$svc_secret" --auth-method client_secret_post --grant-type client_credentials --scope api
		"${admin[0]}" user create "${admin[@]:1}" --email "$email" --password "$password" --verified
	} >/dev/null 2>"$work/admin.log" || { cat "$work/admin.log" >&2; exit 1; }
}

# gatehouse_run NAME DSN ALG [serve flags…] serves Gatehouse on DSN with ALG access tokens
# and measures it.
gatehouse_run() {
	local name=$1 dsn=$2 alg=$3
	shift 3
	local port
	port=$(free_port)
	local base="http://127.0.0.1:$port"
	local profile=()
	if [ "${BENCH_PROFILE:-}" = 1 ] && [ "$name" = pg-ES256 ]; then
		local dport
		dport=$(free_port)
		set -- "$@" --debug-addr "127.0.0.1:$dport"
		profile=(-profile-op "$profile_op" -profile-url "http://127.0.0.1:$dport" -profile-seconds "$profile_seconds" -profile-out "$work/cpu.pprof")
	fi
	GOGC=$gogc GOMEMLIMIT=$gomemlimit "$work/gatehouse" serve --dsn "$dsn" --secret "$secret" --demo=false --addr "127.0.0.1:$port" --issuer "$base" \
		--access-token-alg "$alg" --login-rate-limit off --lockout off --log-level warn "$@" 2>"$work/$name.log" &
	server_pid=$!
	wait_ready "$base/readyz" "$work/$name.log"
	echo "== $name: Gatehouse, $alg access tokens, GOMEMLIMIT=$gomemlimit GOGC=$gogc ($concurrency concurrent, ${seconds}s per operation)" >&2
	"$work/loadgen" run -name "$name" -issuer "$base" -pid "$server_pid" -c "$concurrency" -d "${seconds}s" -warmup "$warmup" \
		-client-id rp -client-secret "$rp_secret" -es256-client-id rp-es256 -es256-client-secret "$rp_secret" \
		-cc-client-id svc -cc-client-secret "$svc_secret" -cc-scope api -redirect-uri "$redirect_uri" \
		-login-url "$base/api/public/login" -session-url "$base/api/public/session" -email "$email" -password "$password" \
		"${profile[@]}" "${ops[@]}" -out "$work/$name.json" || { tail -20 "$work/$name.log" >&2; exit 1; }
	stop_server
	results+=("$work/$name.json")
	if [ ${#profile[@]} -gt 0 ]; then
		cp "$work/cpu.pprof" "${json%.json}.cpu.pprof"
		echo "== CPU profile of Gatehouse (Postgres, ES256) during $profile_op, ${profile_seconds}s: ${json%.json}.cpu.pprof"
		go tool pprof -top -cum -nodecount=30 "$work/gatehouse" "$work/cpu.pprof" 2>/dev/null | head -40
	fi
}

node_run() {
	mkdir -p "$work/node"
	npm install --silent --no-audit --no-fund --prefix "$work/node" "oidc-provider@$node_version" >/dev/null 2>"$work/npm.log" ||
		{ cat "$work/npm.log" >&2; exit 1; }
	cp "$here/node-oidc-provider.mjs" "$work/node/"
	local port
	port=$(free_port)
	local base="http://127.0.0.1:$port"
	(cd "$work/node" && exec node node-oidc-provider.mjs "$port" "$rp_secret" "$svc_secret" "$redirect_uri") 2>"$work/node.log" &
	server_pid=$!
	wait_ready "$base/.well-known/openid-configuration" "$work/node.log"
	echo "== node: node-oidc-provider $node_version on Node.js $(node --version), in memory ($concurrency concurrent, ${seconds}s per operation)" >&2
	"$work/loadgen" run -name node -issuer "$base" -pid "$server_pid" -c "$concurrency" -d "${seconds}s" -warmup "$warmup" \
		-client-id rp -client-secret "$rp_secret" -es256-client-id rp-es256 -es256-client-secret "$rp_secret" \
		-cc-client-id svc -cc-client-secret "$svc_secret" -cc-scope api -redirect-uri "$redirect_uri" \
		-scope "openid profile email offline_access api" -introspect-token refresh \
		-skip "userinfo=its JWT access tokens are for the resource server; its userinfo takes only opaque ones" \
		"${ops[@]}" -out "$work/node.json" || { tail -20 "$work/node.log" >&2; exit 1; }
	stop_server
	results+=("$work/node.json")
}

results=()
report_flags=()
for run in $runs; do
	case $run in
	pg-ES256 | pg-RS256)
		pg_database "gatehouse_bench_$$_$(echo "${run#pg-}" | tr A-Z a-z)"
		gatehouse_setup "$dsn"
		gatehouse_run "$run" "$dsn" "${run#pg-}"
		;;
	sqlite-ES256 | sqlite-RS256)
		dsn="sqlite:$work/$run.db"
		gatehouse_setup "$dsn"
		gatehouse_run "$run" "$dsn" "${run#sqlite-}"
		;;
	node) node_run ;;
	*) echo "unknown run $run in BENCH_RUNS" >&2; exit 2 ;;
	esac
done

if [ "${BENCH_SCALE:-}" = 1 ]; then
	pg_database "gatehouse_bench_$$_scale"
	gatehouse_setup "$dsn"
	echo "== pre-loading $scale_users users and $scale_refresh_tokens refresh tokens" >&2
	t0=$(date +%s)
	for load in "${scale_loaders[@]}"; do "$load" "$dsn"; done
	echo "   loaded in $(($(date +%s) - t0))s; table sizes before the run:"
	scale_table_sizes "$dsn"
	gatehouse_run pg-ES256-scaled "$dsn" ES256 --janitor-interval "${BENCH_SCALE_JANITOR:-15s}"
	echo "== table sizes after the run (the janitor ran every ${BENCH_SCALE_JANITOR:-15s}):"
	scale_table_sizes "$dsn"
	case " $runs " in *" pg-ES256 "*) report_flags+=(-scaled pg-ES256-scaled=pg-ES256) ;; esac
fi

case " $runs " in *" pg-ES256 "*) report_flags+=(-es256 pg-ES256) ;; esac
case " $runs " in *" pg-RS256 "*) report_flags+=(-rs256 pg-RS256) ;; esac
case " $runs " in *" node "*) report_flags+=(-baseline node) ;; esac
"$work/loadgen" report "${report_flags[@]}" -json "$json" "${results[@]}"
echo "bench took $(($(date +%s) - started))s"
