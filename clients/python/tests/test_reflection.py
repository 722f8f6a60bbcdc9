"""Server reflection as a generic client sees it: Python's grpcio-reflection client (which speaks
grpc.reflection.v1alpha) lists the services of each port, and an Ask request is built and sent
from the served descriptors alone — no generated stubs of ours are imported here. The answer
read back through the reflected response type equals the typed client's."""

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from google.protobuf.message_factory import GetMessageClass
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)

# The service each port serves, beside health and reflection.
EXPECTED = {
    "RETRIEVAL": "ontoloop.v1.RetrievalService",
    "FIREWALL": "ontoloop.v1.FirewallService",
    "TELEMETRY": "ontoloop.v1.TelemetryService",
    "ANALYST": "ontoloop.v1.AnalystService",
}


def target(url: str) -> str:
    """host:port of an http:// address."""
    return url.split("://", 1)[-1].rstrip("/")


@pytest.mark.parametrize("service", sorted(EXPECTED))
def test_each_port_lists_its_services_through_v1alpha(secured, service):
    key = {"RETRIEVAL": "url"}.get(service, service.lower())
    with grpc.insecure_channel(target(secured[key])) as channel:
        services = set(ProtoReflectionDescriptorDatabase(channel).get_services())
    assert EXPECTED[service] in services, services
    assert "grpc.health.v1.Health" in services, services


def test_an_ask_built_from_the_served_descriptors_alone_is_answered(secured, token, client):
    with grpc.insecure_channel(target(secured["url"])) as channel:
        pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
        service = pool.FindServiceByName("ontoloop.v1.RetrievalService")
        ask = service.methods_by_name["Ask"]
        request_type = GetMessageClass(ask.input_type)
        response_type = GetMessageClass(ask.output_type)
        request = request_type(text="How much does the Pro plan cost?")
        call = channel.unary_unary(
            f"/{service.full_name}/{ask.name}",
            request_serializer=request_type.SerializeToString,
            response_deserializer=response_type.FromString,
        )
        answer = call(request, metadata=(("authorization", f"Bearer {token}"),), timeout=30)
    typed = client.ask("How much does the Pro plan cost?")
    assert answer.value == typed.value == "49", answer
    status = ask.output_type.fields_by_name["status"]
    assert status.enum_type.values_by_number[answer.status].name == "ANSWER_STATUS_ANSWERED"
    assert [e.source_id for e in answer.evidence] == [e.source_id for e in typed.evidence]
