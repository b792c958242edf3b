// Package synapsepb is the Go code generated from synapse.proto: the
// messages and the gRPC client and server stubs of the five services of
// seed 003 (TaskService, SynapseMessageService, CapabilitiesService,
// GroupService, HealthService). Only binaries built with -tags grpc link
// it (package grpcapi serves it). Regenerate with `make proto`.
package synapsepb
