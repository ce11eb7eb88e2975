package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
)

// do sends one API request with the role's token. It returns the body when
// keep is set; a status other than the expected one is an error.
func (h *harness) do(ctx context.Context, token string, r apiRequest, keep bool) ([]byte, error) {
	return doWith(ctx, h.client, h.cfg.BaseURL, token, r, keep)
}

// doWith is do with client against the server at baseURL.
func doWith(ctx context.Context, client *http.Client, baseURL, token string, r apiRequest, keep bool) ([]byte, error) {
	var body io.Reader
	if r.body != nil {
		body = bytes.NewReader(r.body)
	}
	req, err := http.NewRequestWithContext(ctx, r.method, baseURL+r.path, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if r.body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out []byte
	if keep || resp.StatusCode != r.status {
		out, err = io.ReadAll(resp.Body)
	} else {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != r.status {
		return out, fmt.Errorf("%s %s: status %d, want %d: %.200s", r.method, r.path, resp.StatusCode, r.status, out)
	}
	return out, nil
}
