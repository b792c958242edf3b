package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"

	"github.com/synapse-edge/synapse/auth"
	"github.com/synapse-edge/synapse/contracts"
	"github.com/synapse-edge/synapse/negotiate"
	"github.com/synapse-edge/synapse/peer"
	"github.com/synapse-edge/synapse/wire"
)

// Negotiation routes (SPEC §7). The negotiate_request and
// negotiate_response envelopes themselves travel over POST /message.
//
// POST /negotiate (admin): body = a negotiate_request payload plus "peer",
// the agent_id of a paired agent to negotiate with. Candidate lists left
// out are filled from this agent's configuration; an empty list is sent as
// is. 201 with the stored contract (Location: /contracts/{id}); a refusal
// is the peer's TPError (TP-NEG00x, its status, details with the seed's
// rejected / reason / alternative_proposal); no answer after the retries
// is 504 TP-NEG020.
//
// GET /contracts?peer=&page_token=&limit= → {"contracts":[...],
// "next_page_token"}: one peer's newest first, or all in creation order.
// GET /contracts/{id} (TP-NEG011 when unknown). POST /contracts/{id}/revoke
// (admin): revoked here and the peer told; revoking again changes nothing.
func (c contractAPI) routes() []route {
	return []route{
		{"POST", seg("negotiate"), auth.ScopeAdmin, c.negotiate},
		{"GET", seg("contracts"), auth.ScopeTasksRead, c.listContracts},
		{"GET", seg("contracts/*"), auth.ScopeTasksRead, c.getContract},
		{"POST", seg("contracts/*/revoke"), auth.ScopeAdmin, c.revokeContract},
	}
}

// contractAPI serves the negotiation and contract routes, from the peer
// network's contracts.
type contractAPI struct {
	net *peer.Network // nil: the routes answer 503 (withNet)
}

// negotiateFields are the fields of POST /negotiate's body.
const negotiateFields = "peer, candidate_transports, candidate_tiers, preferred_security_level, session_purpose, goal_type, capability, input_schema, output_schema, private_fields, required_profile"

// decodeNegotiate decodes the body and, in JSON, refuses unknown fields
// (a misspelled "security" must not give a basic contract silently).
func decodeNegotiate(ctx *fasthttp.RequestCtx, b *negotiateBody) error {
	if c, err := requestCodec(ctx); err != nil || c != wire.JSON {
		return decode(ctx, b)
	}
	body := ctx.PostBody()
	if len(body) == 0 {
		return wire.Errorf(wire.CodeMessageFormatInvalid, "the request body is empty")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	err := d.Decode(b)
	if err == nil && d.More() {
		err = errors.New("trailing data after the JSON value")
	}
	if err == nil {
		return nil
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return wire.Errorf(wire.CodeInvalidParams, "unknown field %q in the negotiate body; its fields are %s", name, negotiateFields).With("field", name)
	}
	return wire.Errorf(wire.CodeMessageFormatInvalid, "JSON body: %v", err)
}

// negotiateBody is POST /negotiate's body.
type negotiateBody struct {
	Peer string `json:"peer" msgpack:"peer"`
	negotiate.Request
}

func (c contractAPI) negotiate(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	var b negotiateBody
	if err := decodeNegotiate(ctx, &b); err != nil {
		return err
	}
	if b.Peer == "" {
		return wire.Errorf(wire.CodeInvalidParams, `name the agent to negotiate with: {"peer": "<agent_id>", ...}`).With("field", "peer")
	}
	ci, err := c.net.Negotiate(ctx, b.Peer, b.Request)
	if err != nil {
		return err
	}
	ctx.Response.Header.Set(fasthttp.HeaderLocation, wire.APIPrefix+"/contracts/"+url.PathEscape(ci.Contract.ContractID))
	write(ctx, fasthttp.StatusCreated, ci)
	return nil
}

func (c contractAPI) listContracts(ctx *fasthttp.RequestCtx, _ auth.Principal, _ []string) error {
	limit, err := queryInt(ctx, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	q := ctx.QueryArgs()
	list, next, err := c.net.Contracts().List(contracts.Query{Peer: string(q.Peek("peer")), After: string(q.Peek("page_token")), Limit: limit})
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, map[string]any{"contracts": list, "next_page_token": next})
	return nil
}

func (c contractAPI) getContract(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "contract id")
	if err != nil {
		return err
	}
	ci, err := c.net.Contracts().Get(id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, ci)
	return nil
}

func (c contractAPI) revokeContract(ctx *fasthttp.RequestCtx, _ auth.Principal, args []string) error {
	id, err := pathArg(args[0], "contract id")
	if err != nil {
		return err
	}
	ci, err := c.net.Contracts().Revoke(ctx, id)
	if err != nil {
		return err
	}
	write(ctx, fasthttp.StatusOK, ci)
	return nil
}
