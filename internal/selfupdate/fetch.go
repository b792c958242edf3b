package selfupdate

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// fetchTimeout bounds one download (the body included).
const fetchTimeout = 10 * time.Minute

// Open starts the download of rawURL (http or https): the body, and its
// length when the server gave one (-1 if not). A status other than 200, a
// length over max and other schemes are errors. Close the body.
func Open(ctx context.Context, rawURL string, max int64) (io.ReadCloser, int64, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, 0, fmt.Errorf("update URL %q: not an http or https URL", rawURL)
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, 0, fmt.Errorf("download %s: %v", u.Redacted(), err) // %v: not a failure to reach the agent
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, 0, fmt.Errorf("download %s: %s", u.Redacted(), resp.Status)
	}
	if max > 0 && resp.ContentLength > max {
		resp.Body.Close()
		cancel()
		return nil, 0, fmt.Errorf("download %s: %d bytes, more than the %d-byte cap (update.max_bytes)", u.Redacted(), resp.ContentLength, max)
	}
	return &cancelBody{resp.Body, cancel}, resp.ContentLength, nil
}

// Fetch downloads a small file (a signature) of at most max bytes.
func Fetch(ctx context.Context, rawURL string, max int64) ([]byte, error) {
	body, _, err := Open(ctx, rawURL, max)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	b, err := io.ReadAll(io.LimitReader(body, max+1))
	if err != nil {
		return nil, fmt.Errorf("download %s: %w", rawURL, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("download %s: more than %d bytes", rawURL, max)
	}
	return b, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
