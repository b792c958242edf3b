package client_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/synapse-edge/synapse/client"
)

func TestDecodeError(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		body      string
		wantCode  string
		wantMsg   string
		wantRetry bool
		wantText  string
	}{
		{
			name:      "agent error body",
			status:    429,
			body:      `{"error":{"code":"rate_limited","message":"too many concurrent tasks","details":{"numeric_code":4004},"retriable":true,"correlation_id":"c-1"}}`,
			wantCode:  "rate_limited",
			wantMsg:   "too many concurrent tasks",
			wantRetry: true,
			wantText:  "rate_limited (429): too many concurrent tasks",
		},
		{
			name:     "not found",
			status:   404,
			body:     `{"error":{"code":"task_not_found","message":"no task t-1","retriable":false}}`,
			wantCode: "task_not_found",
			wantMsg:  "no task t-1",
			wantText: "task_not_found (404): no task t-1",
		},
		{
			name:      "plain text from a proxy",
			status:    502,
			body:      "<html>\n  bad   gateway\n</html>",
			wantMsg:   "<html> bad gateway </html>",
			wantRetry: true,
			wantText:  "unexpected_response (502): <html> bad gateway </html>",
		},
		{
			name:     "empty body",
			status:   401,
			wantMsg:  "Unauthorized",
			wantText: "unexpected_response (401): Unauthorized",
		},
		{
			name:     "JSON without an error object",
			status:   400,
			body:     `{"message":"x"}`,
			wantMsg:  `{"message":"x"}`,
			wantText: `unexpected_response (400): {"message":"x"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := client.DecodeError(tt.status, []byte(tt.body))
			if e.Status != tt.status || e.Code != tt.wantCode || e.Message != tt.wantMsg || e.Retriable != tt.wantRetry {
				t.Errorf("got {%d %q %q retriable=%v}, want {%d %q %q retriable=%v}",
					e.Status, e.Code, e.Message, e.Retriable, tt.status, tt.wantCode, tt.wantMsg, tt.wantRetry)
			}
			if got := e.Error(); got != tt.wantText {
				t.Errorf("Error() = %q, want %q", got, tt.wantText)
			}
		})
	}
}

func TestDecodeErrorDetails(t *testing.T) {
	e := client.DecodeError(429, []byte(`{"error":{"code":"rate_limited","message":"m","details":{"numeric_code":4004},"correlation_id":"abc"}}`))
	if got, want := e.Details["numeric_code"], float64(4004); got != want {
		t.Errorf("details.numeric_code = %v, want %v", got, want)
	}
	if got, want := e.CorrelationID, "abc"; got != want {
		t.Errorf("CorrelationID = %q, want %q", got, want)
	}
}

func TestDecodeErrorLongBody(t *testing.T) {
	e := client.DecodeError(500, []byte(strings.Repeat("é", 500)))
	if got := len([]rune(e.Message)); got > 201 {
		t.Errorf("message has %d runes, want at most 201", got)
	}
	if !strings.HasSuffix(e.Message, "…") {
		t.Errorf("message %q does not end with an ellipsis", e.Message)
	}
}

func TestAPIErrorIs(t *testing.T) {
	err := fmt.Errorf("get task: %w", client.DecodeError(404, []byte(`{"error":{"code":"task_not_found","message":"m"}}`)))
	if !errors.Is(err, &client.APIError{Code: "task_not_found"}) {
		t.Error("errors.Is(task_not_found) = false, want true")
	}
	if errors.Is(err, &client.APIError{Code: "task_not_found", Status: 500}) {
		t.Error("errors.Is(task_not_found, 500) = true, want false")
	}
	if errors.Is(err, &client.APIError{Code: "rate_limited"}) {
		t.Error("errors.Is(rate_limited) = true, want false")
	}
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 404 {
		t.Errorf("errors.As gave %v", apiErr)
	}
}
