// Package dpop checks DPoP proofs (RFC 9449, OAuth 2.0 Demonstrating Proof of Possession):
// the one verifier behind Gatehouse's token endpoint and its resource endpoints, exported so
// a team's own resource server checks proofs the same way.
//
// A client that holds a key pair sends, with every request, a short-lived JWT signed by
// that key (the `DPoP` header) naming the request's method and URI. An access token issued
// against such a proof carries the key's thumbprint (`cnf.jkt`, RFC 9449 §6); a resource
// server accepts it only with a fresh proof by the same key, so a stolen token alone is
// useless.
//
// A resource server verifies a request presenting `Authorization: DPoP <token>`:
//
//	v, err := dpop.NewVerifier(dpop.Config{Replay: myReplayCache})
//	...
//	proof, err := v.Verify(ctx, dpop.Request{
//		Proofs:      r.Header.Values("DPoP"),
//		Method:      r.Method,
//		URL:         "https://api.example.com" + r.URL.Path,
//		AccessToken: token,
//	})
//	if err != nil {
//		// 401, WWW-Authenticate: DPoP error="<dpop.ErrorCode(err)>"
//	}
//	if proof.Thumbprint != jktOfToken {
//		// 401 invalid_token: the proof is by another key than the token is bound to
//	}
//
// Errors are values: every refused proof matches ErrInvalidProof (OAuth error
// invalid_dpop_proof), a proof without the server nonce matches ErrUseNonce
// (use_dpop_nonce), and each reason has its own sentinel (ErrType, ErrReplayed, …). Any
// other error is the ReplayCache's, a failure of its store.
package dpop
