//go:build grpc

// Package grpcapi serves the Synapse protocol over gRPC (seed 003): the
// services of synapse.proto, the standard grpc.health.v1 service and
// server reflection. It is compiled only with -tags grpc (always together
// with grpcnotrace), so the default edge binary links no gRPC code.
//
// Every RPC calls the same agent and group methods as the REST routes of
// package httpapi; errors are the same *wire.Error values, turned into
// gRPC status codes by their HTTP status (seed 003 §3.4) with the TPError
// code in an errdetails.ErrorInfo. Bearer tokens come in the
// "authorization" metadata ("Bearer <token>") and need the same scopes as
// the matching REST routes.
package grpcapi
