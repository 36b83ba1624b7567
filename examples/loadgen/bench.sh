#!/usr/bin/env bash
# Starts the example server on a fresh SQLite database (once per access-token algorithm),
# registers a client_credentials client and measures the token endpoint with loadgen.
# With COMPARE=node-oidc-provider it then installs node-oidc-provider from npm into a
# temporary folder and measures it the same way (RS256 JWT access tokens, same client).
# Usage: [COMPARE=node-oidc-provider] examples/loadgen/bench.sh [seconds] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-10}
concurrency=${2:-16}
work=$(mktemp -d)
server_pid=""
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

# wait_ready URL LOG waits up to 10 s for URL to answer, else prints LOG and fails.
wait_ready() {
	for _ in $(seq 1 100); do
		curl -sf "$1" >/dev/null && return 0
		sleep 0.1
	done
	echo "no answer from $1:" >&2
	cat "$2" >&2
	exit 1
}

go build -o "$work/gatehouse" ./examples/server
go build -o "$work/loadgen" ./examples/loadgen
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
client_secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 18080)

for alg in RS256 ES256; do
	dsn="sqlite:$work/bench-$alg.db"
	if ! "$work/gatehouse" client create --dsn "$dsn" --secret "$secret" --id loadgen \
		--client-secret "$client_secret" --grant-type client_credentials --scope api >/dev/null 2>"$work/admin.log"; then
		cat "$work/admin.log" >&2
		exit 1
	fi
	GATEHOUSE_LOG_LEVEL=warn "$work/gatehouse" serve --dsn "$dsn" --secret "$secret" --demo=false \
		--addr "127.0.0.1:$port" --issuer "http://127.0.0.1:$port" --access-token-alg "$alg" 2>"$work/serve.log" &
	server_pid=$!
	wait_ready "http://127.0.0.1:$port/readyz" "$work/serve.log"
	echo "== Gatehouse, SQLite, $alg access tokens, $concurrency concurrent, ${seconds}s"
	"$work/loadgen" -token-url "http://127.0.0.1:$port/api/oauth/token" -client-id loadgen \
		-client-secret "$client_secret" -scope api -c "$concurrency" -d "${seconds}s"
	kill "$server_pid"
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
done

if [ "${COMPARE:-}" = node-oidc-provider ]; then
	npm install --silent --no-audit --no-fund --prefix "$work/node" oidc-provider@9 >/dev/null
	cp examples/loadgen/node-oidc-provider.mjs "$work/node/"
	node "$work/node/node-oidc-provider.mjs" "$port" "$client_secret" >"$work/node.log" 2>&1 &
	server_pid=$!
	wait_ready "http://127.0.0.1:$port/.well-known/openid-configuration" "$work/node.log"
	echo "== node-oidc-provider $(node -p "require('$work/node/node_modules/oidc-provider/package.json').version"), in memory, RS256 JWT access tokens, $concurrency concurrent, ${seconds}s"
	"$work/loadgen" -token-url "http://127.0.0.1:$port/token" -client-id loadgen \
		-client-secret "$client_secret" -scope api -c "$concurrency" -d "${seconds}s"
fi
