package httpapi

import (
	"encoding/json"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/wire"
)

// The Agent Card (GET /.well-known/agent-card.json, public) advertises the
// A2A JSON-RPC interface at /a2a in both the v0.3 fields (url,
// preferredTransport, additionalInterfaces) and the v1.0 ones
// (supportedInterfaces), next to the native API; one skill per registered
// task type; bearer authentication in securitySchemes, required by
// security. URLs are built from the request's Host.

type cardInterface struct {
	URL             string `json:"url"`
	Transport       string `json:"transport,omitempty"`
	ProtocolBinding string `json:"protocolBinding,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
}

type cardSkill struct {
	ID          string   `json:"id"`
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Tags        []string `json:"tags"`
	InputModes  []string `json:"inputModes"`
	OutputModes []string `json:"outputModes"`
}

type agentCard struct {
	ProtocolVersion      string                    `json:"protocolVersion"`
	Name                 string                    `json:"name"`
	Description          string                    `json:"description"`
	URL                  string                    `json:"url"`
	PreferredTransport   string                    `json:"preferredTransport"`
	AdditionalInterfaces []cardInterface           `json:"additionalInterfaces"`
	SupportedInterfaces  []cardInterface           `json:"supportedInterfaces"`
	Version              string                    `json:"version"`
	Capabilities         map[string]any            `json:"capabilities"`
	SecuritySchemes      map[string]map[string]any `json:"securitySchemes"`
	Security             []map[string][]string     `json:"security"`
	DefaultInputModes    []string                  `json:"defaultInputModes"`
	DefaultOutputModes   []string                  `json:"defaultOutputModes"`
	Skills               []cardSkill               `json:"skills"`
}

var (
	a2aInputModes  = []string{"text/plain", wire.ContentJSON}
	a2aOutputModes = []string{wire.ContentJSON}
)

func (s *Server) agentCard(ctx *fasthttp.RequestCtx) error {
	scheme := "http://"
	if ctx.IsTLS() {
		scheme = "https://"
	}
	base := scheme + string(ctx.Host())
	rpc := base + a2aPath
	id := s.a.Identity()
	name := id.AgentName
	if name == "" {
		name = id.AgentID
	}
	card := &agentCard{
		ProtocolVersion:    "0.3.0",
		Name:               name,
		Description:        "Synapse edge agent: every task is persisted, callbacks are retried through a durable outbox.",
		URL:                rpc,
		PreferredTransport: "JSONRPC",
		AdditionalInterfaces: []cardInterface{
			{URL: rpc, Transport: "JSONRPC"},
		},
		SupportedInterfaces: []cardInterface{
			{URL: rpc, ProtocolBinding: "JSONRPC", ProtocolVersion: "1.0"},
			{URL: rpc, ProtocolBinding: "JSONRPC", ProtocolVersion: "0.3"},
			{URL: base + Prefix, ProtocolBinding: "SYNAPSE", ProtocolVersion: "1"},
		},
		Version: s.version,
		Capabilities: map[string]any{
			"streaming": true, "pushNotifications": true, "stateTransitionHistory": false,
		},
		SecuritySchemes: map[string]map[string]any{
			"bearer": {"type": "http", "scheme": "bearer",
				"httpAuthSecurityScheme": map[string]string{"scheme": "Bearer"}},
		},
		Security:           []map[string][]string{{"bearer": {}}},
		DefaultInputModes:  a2aInputModes,
		DefaultOutputModes: a2aOutputModes,
		Skills:             []cardSkill{},
	}
	for _, tt := range s.a.Capabilities().SupportedTaskTypes {
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
	writeRaw(ctx, fasthttp.StatusOK, wire.ContentJSON, b)
	return nil
}
