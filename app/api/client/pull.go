package client

import (
	"context"

	"homering/app/api/apitype"
)

// Pull starts downloading ref (a .gguf URL or Hugging Face reference) into
// the agent's model folder.
func (c *Client) Pull(ctx context.Context, ref string) (apitype.Pull, error) {
	return post[apitype.Pull](ctx, c, "/api/v1/pull", apitype.PullRequest{Ref: ref})
}

// Pulls lists the agent's downloads, oldest first.
func (c *Client) Pulls(ctx context.Context) ([]apitype.Pull, error) {
	return get[[]apitype.Pull](ctx, c, "/api/v1/pulls")
}

// CancelPull stops the download id.
func (c *Client) CancelPull(ctx context.Context, id string) error {
	_, err := post[struct{}](ctx, c, "/api/v1/pull/cancel", apitype.PullCancelRequest{ID: id})
	return err
}
