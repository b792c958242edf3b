package a2ahttp

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// The Agent Card (GET CardPath, public) is an A2A v1.0
// card, as the reference servers serve it: supportedInterfaces lists the
// JSON-RPC interface at /a2a for v1.0 and for v0.3 (same URL, the method
// names tell the version apart) and the native API; one skill per
// registered task type; bearer authentication in securitySchemes
// (httpAuthSecurityScheme), required by securityRequirements. URLs are
// built from the request's Host.

type cardInterface struct {
	URL             string `json:"url"`
	ProtocolBinding string `json:"protocolBinding"`
	ProtocolVersion string `json:"protocolVersion"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	InputModes  []string `json:"inputModes"`
	OutputModes []string `json:"outputModes"`
}

type cardSecurity struct {
	Schemes map[string][]string `json:"schemes"`
}

type agentCard struct {
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	SupportedInterfaces  []cardInterface           `json:"supportedInterfaces"`
	Version              string                    `json:"version"`
	Capabilities         map[string]any            `json:"capabilities"`
	SecuritySchemes      map[string]map[string]any `json:"securitySchemes"`
	SecurityRequirements []cardSecurity            `json:"securityRequirements"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []cardSkill               `json:"skills"`
}

var (
	a2aInputModes  = []string{"text/plain", wire.ContentJSON}
	a2aOutputModes = []string{wire.ContentJSON}
)

func (h *Handler) agentCard(ctx *fasthttp.RequestCtx) error {
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	base := scheme + string(ctx.Host())
	rpc := base + Path
	id := h.a.Identity()
	name := id.AgentName
	if name == "" {
		name = id.AgentID
	}
	card := &agentCard{
		Name:        name,
		Description: "Synapse edge agent: every task is persisted, callbacks are retried through a durable outbox.",
		SupportedInterfaces: []cardInterface{
			{URL: rpc, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: rpc, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
			{URL: base + wire.APIPrefix, ProtocolBinding: "SYNAPSE", ProtocolVersion: "1"},
		},
		Version:      h.version,
		Capabilities: map[string]any{"streaming": true, "pushNotifications": true},
		SecuritySchemes: map[string]map[string]any{
			"bearer": {"httpAuthSecurityScheme": map[string]string{"scheme": "Bearer"}},
		},
		SecurityRequirements: []cardSecurity{{Schemes: map[string][]string{"bearer": {}}}},
		DefaultInputModes:    a2aInputModes,
		DefaultOutputModes:   a2aOutputModes,
		Skills:               []cardSkill{},
	}
	for _, tt := range h.a.Capabilities().SupportedTaskTypes {
		sk := cardSkill{ID: tt.Type, Name: tt.Name, Description: tt.Description,
			Tags: []string{"task_type:" + tt.Type}, InputModes: a2aInputModes, OutputModes: a2aOutputModes}
		if sk.Name == "" {
			sk.Name = tt.Type
		}
		if sk.Description == "" {
			sk.Description = "task type " + tt.Type + ": set message metadata task_type to use it"
		}
		card.Skills = append(card.Skills, sk)
	}
	b, err := json.Marshal(card)
	if err != nil {
		return wire.Errorf(wire.CodeInternal, "encode agent card: %v", err)
	}
	ctx.Response.Header.Set(fasthttp.HeaderCacheControl, "max-age=60")
	answer(ctx, fasthttp.StatusOK, wire.ContentJSON, b)
	return nil
}
