package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"homering/app/api/apitype"
)

// ErrNoAgent means no agent runs for the config directory.
var ErrNoAgent = errors.New("client: no Homering agent is running for this config directory; start it (homering headless, or the app)")

// Client talks to one agent.
type Client struct {
	Info apitype.Info
	HTTP *http.Client
}

// FromDir reads dir/api.json.
func FromDir(dir string) (*Client, error) {
	b, err := os.ReadFile(filepath.Join(dir, apitype.InfoFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrNoAgent
	}
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	var info apitype.Info
	if err := json.Unmarshal(b, &info); err != nil {
		return nil, fmt.Errorf("client: %s is damaged: %w", apitype.InfoFile, err)
	}
	return &Client{Info: info, HTTP: &http.Client{}}, nil
}

// APIError is an error answer of the agent.
type APIError struct {
	Status int
	Text   string // one sentence for a person
}

func (e *APIError) Error() string { return e.Text }

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Info.URL+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Info.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoAgent, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e apitype.Error
		if json.Unmarshal(b, &e) != nil || e.Error == "" {
			e.Error = resp.Status
		}
		return &APIError{Status: resp.StatusCode, Text: e.Error}
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

func get[T any](ctx context.Context, c *Client, path string) (T, error) {
	var v T
	err := c.do(ctx, http.MethodGet, path, nil, &v)
	return v, err
}

func post[T any](ctx context.Context, c *Client, path string, in any) (T, error) {
	var v T
	err := c.do(ctx, http.MethodPost, path, in, &v)
	return v, err
}

// Status returns the agent's status.
func (c *Client) Status(ctx context.Context) (apitype.Status, error) {
	return get[apitype.Status](ctx, c, "/api/v1/status")
}

// Peers lists devices.
func (c *Client) Peers(ctx context.Context) (apitype.Peers, error) {
	return get[apitype.Peers](ctx, c, "/api/v1/peers")
}

// AddPeer adds a device by address.
func (c *Client) AddPeer(ctx context.Context, addr string) (apitype.Peer, error) {
	return post[apitype.Peer](ctx, c, "/api/v1/peers/add", apitype.AddPeerRequest{Addr: addr})
}

// RemovePeer forgets a manually added device.
func (c *Client) RemovePeer(ctx context.Context, peer string) error {
	_, err := post[struct{}](ctx, c, "/api/v1/peers/remove", apitype.PeerRequest{Peer: peer})
	return err
}

// Probe tries a link to a device.
func (c *Client) Probe(ctx context.Context, peer string) (apitype.Probe, error) {
	return post[apitype.Probe](ctx, c, "/api/v1/peers/probe", apitype.PeerRequest{Peer: peer})
}

// PairStatus reports the pairing window and last result.
func (c *Client) PairStatus(ctx context.Context) (apitype.PairStatus, error) {
	return get[apitype.PairStatus](ctx, c, "/api/v1/pair")
}

// ShowCode opens a pairing window and returns its code.
func (c *Client) ShowCode(ctx context.Context) (apitype.PairShow, error) {
	return post[apitype.PairShow](ctx, c, "/api/v1/pair/show", struct{}{})
}

// EnterCode pairs with peer using the code it shows.
func (c *Client) EnterCode(ctx context.Context, peer, code string) (apitype.Peer, error) {
	return post[apitype.Peer](ctx, c, "/api/v1/pair/enter", apitype.PairEnterRequest{Peer: peer, Code: code})
}

// Unpair forgets a paired device on both sides (the other when reachable).
func (c *Client) Unpair(ctx context.Context, peer string) (apitype.Peer, error) {
	return post[apitype.Peer](ctx, c, "/api/v1/unpair", apitype.PeerRequest{Peer: peer})
}

// SetContribute turns contributing on or off.
func (c *Client) SetContribute(ctx context.Context, on bool) (apitype.Status, error) {
	return post[apitype.Status](ctx, c, "/api/v1/contribute", apitype.ContributeRequest{On: on})
}

// Doctor returns the agent's diagnostics.
func (c *Client) Doctor(ctx context.Context) (apitype.Doctor, error) {
	return get[apitype.Doctor](ctx, c, "/api/v1/doctor")
}

// Watch calls fn for every event until ctx ends or the agent goes away.
func (c *Client) Watch(ctx context.Context, fn func(apitype.Event)) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.Info.URL+"/api/v1/watch", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Info.Token)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoAgent, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return &APIError{Status: resp.StatusCode, Text: resp.Status}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var e apitype.Event
		if err := json.Unmarshal([]byte(data), &e); err != nil {
			return fmt.Errorf("client: bad event %q: %w", data, err)
		}
		fn(e)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return sc.Err()
}
