package provider

import "context"

// Internals reached by the external tests (package provider_test), so they drive the key
// set with their own clock instead of waiting for the reload ticker.

// RotateDueKeys runs the scheduled rotation check now, as each reload tick does.
func (p *Provider) RotateDueKeys(ctx context.Context) error { return p.keys.rotateDue(ctx) }

// ReloadKeys re-reads the key set from the database now, as each reload tick does.
func (p *Provider) ReloadKeys(ctx context.Context) error { return p.keys.load(ctx) }

// DeliverLogouts runs one step of the back-channel logout worker (deliverLogouts), so tests
// drive deliveries and retries without waiting for its ticker.
func (p *Provider) DeliverLogouts(ctx context.Context) (int, error) { return p.deliverLogouts(ctx) }
