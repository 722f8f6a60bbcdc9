"""The generated protobuf and gRPC modules, for what the typed Client does not cover:
``pb.retrieval_pb2.PlateRequest``, ``pb.analyst_pb2_grpc.AnalystServiceStub``..."""

from ._proto.ontoloop.v1 import (  # noqa: F401
    analyst_pb2,
    analyst_pb2_grpc,
    common_pb2,
    firewall_pb2,
    firewall_pb2_grpc,
    retrieval_pb2,
    retrieval_pb2_grpc,
    telemetry_pb2,
    telemetry_pb2_grpc,
)
