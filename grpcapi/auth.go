//go:build grpc

package grpcapi

import (
	"context"
	"crypto/x509"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/synapse-edge/synapse/auth"
	pb "github.com/synapse-edge/synapse/proto"
	"github.com/synapse-edge/synapse/wire"
)

// methodScope is the scope each method of synapse.proto needs: that of
// the matching REST route. "" is public: health, capabilities, and
// SendMessage, whose envelope signature is the authentication; so are the
// methods not listed (the standard health service, reflection).
func methodScope(method string) auth.Scope {
	switch method {
	case pb.TaskService_SubmitTask_FullMethodName,
		pb.TaskService_SubmitTaskWithFiles_FullMethodName,
		pb.TaskService_CancelTask_FullMethodName,
		pb.SynapseMessageService_StreamMessages_FullMethodName,
		pb.GroupService_CreateGroup_FullMethodName,
		pb.GroupService_JoinGroup_FullMethodName,
		pb.GroupService_LeaveGroup_FullMethodName,
		pb.GroupService_DisbandGroup_FullMethodName:
		return auth.ScopeTasksWrite
	case pb.TaskService_GetTask_FullMethodName,
		pb.TaskService_GetTaskStatus_FullMethodName,
		pb.TaskService_ListTasks_FullMethodName,
		pb.TaskService_StreamTaskStatus_FullMethodName,
		pb.SynapseMessageService_ReceiveCallback_FullMethodName,
		pb.CapabilitiesService_QueryAgent_FullMethodName,
		pb.CapabilitiesService_ListAgents_FullMethodName,
		pb.GroupService_ListGroupMembers_FullMethodName,
		pb.GroupService_StreamGroupMessages_FullMethodName:
		return auth.ScopeTasksRead
	}
	return ""
}

type principalKey struct{}

// principal is the caller authenticated by the interceptors (zero for
// public methods).
func principal(ctx context.Context) auth.Principal {
	p, _ := ctx.Value(principalKey{}).(auth.Principal)
	return p
}

// authorize checks the bearer token of ctx for method's scope and returns
// ctx with the principal.
func (s *Server) authorize(ctx context.Context, method string) (context.Context, error) {
	scope := methodScope(method)
	if scope == "" {
		return ctx, nil
	}
	return s.authorizeScope(ctx, scope)
}

// authorizeScope is authorize for a scope: that of a public method's
// request that needs one (SendMessage without an envelope).
func (s *Server) authorizeScope(ctx context.Context, scope auth.Scope) (context.Context, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	var tok string
	for _, v := range md.Get("authorization") {
		if len(v) > 7 && strings.EqualFold(v[:7], "Bearer ") {
			tok = strings.TrimSpace(v[7:])
			break
		}
	}
	if tok == "" {
		if p, ok := s.certPrincipal(ctx); ok {
			if !p.Can(scope) {
				return ctx, toStatus(wire.Errorf(wire.CodePermissionDenied, "this client certificate (%s) lacks the %q scope", p.Name, scope).With("scope", string(scope)))
			}
			return context.WithValue(ctx, principalKey{}, p), nil
		}
		return ctx, toStatus(wire.Errorf(wire.CodeUnauthorized, "missing authorization: Bearer <token> metadata"))
	}
	p, err := s.a.Tokens().Authenticate(tok)
	if err != nil {
		return ctx, toStatus(err)
	}
	if !p.Can(scope) {
		return ctx, toStatus(wire.Errorf(wire.CodePermissionDenied, "this token lacks the %q scope", scope).With("scope", string(scope)))
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

// CertPrincipals maps a client certificate the handshake verified onto
// a principal (tlscert.Clients), as for the HTTP API.
type CertPrincipals interface {
	Principal(cert *x509.Certificate) (auth.Principal, bool)
}

// certPrincipal is the principal of the call's client certificate,
// verified by the handshake against tls.client_ca_file and mapped in
// tls.clients. A call with a bearer token is judged by the token.
func (s *Server) certPrincipal(ctx context.Context) (auth.Principal, bool) {
	if s.certs == nil {
		return auth.Principal{}, false
	}
	pr, ok := peer.FromContext(ctx)
	if !ok {
		return auth.Principal{}, false
	}
	info, ok := pr.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.VerifiedChains) == 0 || len(info.State.PeerCertificates) == 0 {
		return auth.Principal{}, false
	}
	return s.certs.Principal(info.State.PeerCertificates[0])
}

func (s *Server) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	ctx, err := s.authorize(ctx, info.FullMethod)
	if err != nil {
		return nil, err
	}
	resp, err := h(ctx, req)
	return resp, toStatus(err)
}

// authStream is a server stream whose context carries the principal.
type authStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (a *authStream) Context() context.Context { return a.ctx }

func (s *Server) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	ctx, err := s.authorize(ss.Context(), info.FullMethod)
	if err != nil {
		return err
	}
	return toStatus(h(srv, &authStream{ServerStream: ss, ctx: ctx}))
}
