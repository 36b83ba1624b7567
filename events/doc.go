// Package events defines the typed events Gatehouse emits when something security-relevant
// happened (a login, a registration, a token issued or revoked, a consent, a permission
// change) and delivers them to one Sink. The domain packages (publicauth, permissions and
// provider) import it to emit; it imports none of them.
//
// An embedder listens through provider.WithEvents:
//
//	p, err := provider.New(cfg, provider.WithEvents(func(ctx context.Context, e provider.Event) {
//		switch e := e.(type) {
//		case *provider.LoginFailed:
//			logger.WarnContext(ctx, e.Name(), "method", e.Method, "reason", e.Reason, "ip", e.ClientIP)
//		default:
//			logger.InfoContext(ctx, e.Name(), "at", e.When())
//		}
//	}))
//
// Every event is a pointer to one of the structs below, each embedding Meta (when, and from
// which client address and user agent). The set is closed: only this package defines
// events. Delivery follows three rules, which Emitter enforces:
//
//   - After the commit. An event emitted inside a database transaction is delivered only
//     once that transaction has committed, and dropped when it rolls back, so a sink never
//     hears of a change that did not happen and never runs while a transaction is open.
//   - Safely. A sink that panics is recovered and logged; the request that emitted the event
//     goes on as if nothing happened.
//   - In the request. The sink runs synchronously on the goroutine of the change, with the
//     request's context (free of Gatehouse's transaction), so it can read its own request
//     values (a request id, a trace span). It should return quickly: hand slow work, such
//     as a network call, to a queue of its own.
//
// An Emitter may also record each event (WithRecorder): the provider writes it to the audit
// trail, storage's security_events, inside the transaction of the change, so the change and
// its record commit or roll back together. RecordOf is the one place that turns an event
// into such a record.
//
// Events carry ids, never secrets: no password, token, PIN or client secret. A token is
// named by its jti (TokenIssued.TokenID) and its grant (GrantID). An email address appears
// only in events about that address (UserRegistered, EmailVerified); a failed login never
// carries the address typed, which may be a mistyped address of someone else, or a
// password typed into the wrong field.
package events
