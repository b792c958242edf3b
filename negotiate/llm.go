package negotiate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// The LLM backend of tiers 2 and 3: any server of the OpenAI-compatible
// chat completions API (llama.cpp server, Ollama, vLLM). One request:
//
//	POST <url>/chat/completions
//	Authorization: Bearer <api key>          (when there is one)
//	{"model": "...", "messages": [{"role": "system"|"user", "content": "..."}], "temperature": 0}
//
// and the answer's choices[0].message.content is the reply. url is the
// API base, e.g. http://127.0.0.1:8081/v1; a url that already ends in
// /chat/completions is used as is.

// ErrLLM wraps every failure of the LLM backend.
var ErrLLM = errors.New("LLM backend failed")

// maxLLMAnswer bounds the answer read.
const maxLLMAnswer = 4 << 20

// ChatMessage is one message of a chat completion.
type ChatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// LLM is a chat-completions client.
type LLM struct {
	URL    string
	Model  string
	APIKey string
	// HTTP sends the requests; its timeout, if any, applies.
	HTTP *http.Client
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []ChatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message ChatMessage `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Chat sends msgs and returns the reply's text.
func (c *LLM) Chat(ctx context.Context, msgs []ChatMessage) (string, error) {
	url := strings.TrimRight(c.URL, "/")
	if !strings.HasSuffix(url, "/chat/completions") {
		url += "/chat/completions"
	}
	body, err := json.Marshal(chatRequest{Model: c.Model, Messages: msgs, Temperature: 0})
	if err != nil {
		return "", fmt.Errorf("%w: encode request: %v", ErrLLM, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLLM, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrLLM, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxLLMAnswer+1))
	if err != nil {
		return "", fmt.Errorf("%w: read answer: %v", ErrLLM, err)
	}
	if len(raw) > maxLLMAnswer {
		return "", fmt.Errorf("%w: answer is over %d bytes", ErrLLM, maxLLMAnswer)
	}
	var cr chatResponse
	jerr := json.Unmarshal(raw, &cr)
	if resp.StatusCode/100 != 2 {
		msg := strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		if jerr == nil && cr.Error != nil {
			msg = cr.Error.Message
		}
		return "", fmt.Errorf("%w: HTTP %d: %s", ErrLLM, resp.StatusCode, msg)
	}
	if jerr != nil {
		return "", fmt.Errorf("%w: answer is not a chat completion: %v", ErrLLM, jerr)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("%w: the answer has no choices", ErrLLM)
	}
	return cr.Choices[0].Message.Content, nil
}
