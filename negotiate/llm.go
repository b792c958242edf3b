package negotiate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/synapse-edge/synapse/transport"
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
	// Transport sends the requests (as transport.Request messages).
	Transport transport.Transport
	// Timeout bounds one request (0: only the caller's context does).
	Timeout time.Duration
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
	if c.Transport == nil {
		return "", fmt.Errorf("%w: no transport to send through", ErrLLM)
	}
	h := map[string]string{}
	if c.APIKey != "" {
		h[transport.HeaderAuthorization] = "Bearer " + c.APIKey
	}
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	o := c.Transport.Send(ctx, &transport.Message{Kind: transport.Request, To: url, Body: body,
		ContentType: "application/json", Header: h, MaxReply: maxLLMAnswer})
	if o.Status == 0 {
		return "", fmt.Errorf("%w: %v", ErrLLM, o.Err)
	}
	raw := o.Reply
	if o.Truncated {
		if len(raw) < maxLLMAnswer {
			return "", fmt.Errorf("%w: the answer broke off after %d bytes", ErrLLM, len(raw))
		}
		return "", fmt.Errorf("%w: answer is over %d bytes", ErrLLM, maxLLMAnswer)
	}
	var cr chatResponse
	jerr := json.Unmarshal(raw, &cr)
	if !o.Delivered() {
		msg := strings.TrimSpace(string(raw[:min(len(raw), 200)]))
		if jerr == nil && cr.Error != nil {
			msg = cr.Error.Message
		}
		return "", fmt.Errorf("%w: HTTP %d: %s", ErrLLM, o.Status, msg)
	}
	if jerr != nil {
		return "", fmt.Errorf("%w: answer is not a chat completion: %v", ErrLLM, jerr)
	}
	if len(cr.Choices) == 0 {
		return "", fmt.Errorf("%w: the answer has no choices", ErrLLM)
	}
	return cr.Choices[0].Message.Content, nil
}
