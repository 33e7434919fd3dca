package client

import (
	"context"

	"homering/app/api/apitype"
)

// Ring returns the agent's last ring plan and measurements.
func (c *Client) Ring(ctx context.Context) (apitype.RingStatus, error) {
	return get[apitype.RingStatus](ctx, c, "/api/v1/ring")
}
