package provider

import "context"

// DeliverLogouts runs one step of the back-channel logout worker (deliverLogouts), so tests
// drive deliveries and retries without waiting for its ticker.
func (p *Provider) DeliverLogouts(ctx context.Context) (int, error) { return p.deliverLogouts(ctx) }
