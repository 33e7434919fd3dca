package client

import (
	"context"

	"homering/app/api/apitype"
)

// Ring returns the agent's last ring plan and measurements.
func (c *Client) Ring(ctx context.Context) (apitype.RingStatus, error) {
	return get[apitype.RingStatus](ctx, c, "/api/v1/ring")
}

// Plan returns the device map: the plan the next chat runs (app/planner).
func (c *Client) Plan(ctx context.Context) (apitype.Plan, error) {
	return get[apitype.Plan](ctx, c, "/api/v1/plan")
}

// Settings returns this device's settings.
func (c *Client) Settings(ctx context.Context) (apitype.Settings, error) {
	return get[apitype.Settings](ctx, c, "/api/v1/settings")
}

// SaveSettings stores s as this device's settings and returns them as saved.
func (c *Client) SaveSettings(ctx context.Context, s apitype.Settings) (apitype.Settings, error) {
	return post[apitype.Settings](ctx, c, "/api/v1/settings", s)
}
