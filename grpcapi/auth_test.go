//go:build grpc

package grpcapi_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/synapse-edge/synapse/auth"
	pb "github.com/synapse-edge/synapse/proto"
)

// call invokes method with an empty request (valid for every message
// type) and returns the error of the call or of its first answer.
func call(ctx context.Context, conn *grpc.ClientConn, method string, streaming bool) error {
	if !streaming {
		return conn.Invoke(ctx, method, &emptypb.Empty{}, &emptypb.Empty{})
	}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, method)
	if err != nil {
		return err
	}
	// SendMsg reports a stream the server ended as io.EOF; RecvMsg then
	// has the status.
	if err := st.SendMsg(&emptypb.Empty{}); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if err := st.CloseSend(); err != nil {
		return err
	}
	return st.RecvMsg(&emptypb.Empty{})
}

// TestEveryRPCChecksItsScope calls each of the 20 RPCs without a token
// and with a token lacking the tasks scopes: all but the public ones
// (HealthCheck, GetCapabilities, SendMessage: the envelope's signature
// authenticates it) refuse, as their REST routes do.
func TestEveryRPCChecksItsScope(t *testing.T) {
	n := startNode(t, "auth")
	public := map[string]bool{
		pb.HealthService_HealthCheck_FullMethodName:           true,
		pb.CapabilitiesService_GetCapabilities_FullMethodName: true,
		pb.SynapseMessageService_SendMessage_FullMethodName:   true,
	}
	other := n.token(t, auth.ScopeTier1Read)
	count := 0
	for _, sd := range []grpc.ServiceDesc{pb.TaskService_ServiceDesc, pb.SynapseMessageService_ServiceDesc,
		pb.CapabilitiesService_ServiceDesc, pb.GroupService_ServiceDesc, pb.HealthService_ServiceDesc} {
		type rpc struct {
			name      string
			streaming bool
		}
		var rpcs []rpc
		for _, m := range sd.Methods {
			rpcs = append(rpcs, rpc{m.MethodName, false})
		}
		for _, s := range sd.Streams {
			rpcs = append(rpcs, rpc{s.StreamName, true})
		}
		for _, r := range rpcs {
			count++
			method := "/" + sd.ServiceName + "/" + r.name
			t.Run(r.name, func(t *testing.T) {
				noTok, _ := codeOf(call(as(t, ""), n.conn, method, r.streaming))
				wrong, _ := codeOf(call(as(t, other), n.conn, method, r.streaming))
				if public[method] {
					if noTok == codes.Unauthenticated || noTok == codes.PermissionDenied {
						t.Errorf("public %s without token: %v", method, noTok)
					}
					return
				}
				if noTok != codes.Unauthenticated {
					t.Errorf("%s without token: %v, want Unauthenticated", method, noTok)
				}
				if wrong != codes.PermissionDenied {
					t.Errorf("%s with a tier1:read token: %v, want PermissionDenied", method, wrong)
				}
			})
		}
	}
	if count != 20 {
		t.Errorf("%d RPCs, want the seed's 20", count)
	}
}
