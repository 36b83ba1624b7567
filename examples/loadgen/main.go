// Command loadgen is the load driver of `make bench`: it measures an OpenID Connect
// provider operation by operation — password login, session check, authorize with a
// session, code exchange, refresh, client_credentials, introspection, userinfo and
// revocation — with concurrent clients over keep-alive connections, and reports requests
// per second, p50 and p99 latency, the server's CPU per operation and its peak RSS (from
// /proc of the server's pid). It speaks standard OAuth 2.0 and OpenID Connect over HTTP
// (endpoints from discovery, client_secret_post, PKCE S256), plus a JSON password-login
// API when the provider has one, so the same run can target Gatehouse, node-oidc-provider
// or any other provider on the same machine.
//
//	loadgen run -name gatehouse -issuer http://127.0.0.1:8080 -client-id rp -client-secret … \
//		-cc-client-id svc -cc-client-secret … -redirect-uri http://127.0.0.1:1/cb \
//		-login-url http://127.0.0.1:8080/api/public/login -email … -password … -pid 1234 -out g.json
//	loadgen report -baseline node -es256 gatehouse -json bench.json g.json node.json
//
// `run` writes one provider's figures as JSON; `report` prints them side by side with the
// ratios to the baseline and a verdict per target of issue 10. examples/loadgen/bench.sh
// (`make bench`) starts the servers and runs both.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

func main() {
	if err := dispatch(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func dispatch(args []string, stdout io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: loadgen run|report [flags] (see -h of each)")
	}
	switch args[0] {
	case "run":
		return runCommand(args[1:], stdout)
	case "report":
		return reportCommand(args[1:], stdout)
	}
	return fmt.Errorf("unknown command %q: want run or report", args[0])
}
