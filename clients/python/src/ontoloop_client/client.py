"""The Client: one gRPC channel per ontoloop service, the bearer token on every call, and typed
methods over the generated stubs."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Optional, Sequence
from urllib.parse import urlsplit

import grpc

from . import pb
from .errors import from_rpc_error
from .types import (
    Answer,
    Citation,
    Claim,
    EventAck,
    EventKind,
    Passage,
    RiskLevel,
    SearchResult,
    Severity,
    SignalAck,
    SignalType,
    Validation,
    _enum_name,
    _timestamp,
    event_field,
)

#: The default port layout (`services.*_port`): retrieval, firewall, telemetry, analyst.
DEFAULT_PORTS = {"retrieval": 50051, "firewall": 50052, "telemetry": 50053, "analyst": 50054}


class Client:
    """A client of the four services.

    ``url`` is ``http://HOST[:PORT]`` or ``https://HOST[:PORT]``: the retrieval service's
    address; the firewall, telemetry and analyst are on the same host at the next three ports (the
    default layout: 50051, 50052, 50053, 50054). Give ``firewall``, ``telemetry`` or ``analyst``
    (URLs of the same form) when they are elsewhere.

    ``token`` is the bearer the services check (``auth.mode = "jwt"`` or ``"dev"``); the caller
    is then the token's tenant and principal. With ``auth.mode = "off"`` there is no token and the
    request's caller is trusted: give ``tenant`` and ``principal``. With a token, a ``tenant`` or
    ``principal`` that is not the token's is refused (PERMISSION_DENIED).

    ``https://`` dials TLS, trusting ``ca_file`` (PEM) or the system's roots when it is None;
    ``client_cert_file`` + ``client_key_file`` present a certificate for mTLS, and ``tls_domain``
    is the name checked in the server's certificate instead of the host dialled.

    Every call has a ``timeout`` (seconds) and raises an ``OntoloopError`` (subclassed by code:
    ``Unauthenticated``, ``PermissionDenied``, ``InvalidArgument``...) carrying the reason.
    """

    def __init__(
        self,
        url: str,
        token: Optional[str] = None,
        *,
        tenant: str = "",
        principal: str = "",
        firewall: Optional[str] = None,
        telemetry: Optional[str] = None,
        analyst: Optional[str] = None,
        ca_file: Optional[str] = None,
        client_cert_file: Optional[str] = None,
        client_key_file: Optional[str] = None,
        tls_domain: Optional[str] = None,
        timeout: float = 30.0,
    ):
        self._token = token
        self._caller = pb.common_pb2.Caller(tenant=tenant, principal=principal)
        self._timeout = timeout
        credentials = None
        if (client_cert_file is None) != (client_key_file is None):
            raise ValueError("client_cert_file and client_key_file go together")
        options = []
        if tls_domain:
            options.append(("grpc.ssl_target_name_override", tls_domain))
        retrieval = _Address.parse(url, "retrieval")
        addresses = {
            "retrieval": retrieval,
            "firewall": _Address.parse(firewall, "firewall") if firewall else retrieval.sibling("firewall"),
            "telemetry": _Address.parse(telemetry, "telemetry") if telemetry else retrieval.sibling("telemetry"),
            "analyst": _Address.parse(analyst, "analyst") if analyst else retrieval.sibling("analyst"),
        }
        if any(a.tls for a in addresses.values()):
            credentials = grpc.ssl_channel_credentials(
                root_certificates=_read(ca_file),
                private_key=_read(client_key_file),
                certificate_chain=_read(client_cert_file),
            )
        self._channels = {}
        for name, address in addresses.items():
            if address.tls:
                channel = grpc.secure_channel(address.target, credentials, options=options)
            else:
                channel = grpc.insecure_channel(address.target, options=options)
            self._channels[name] = channel
        #: The generated stubs, for RPCs the typed methods do not cover (Plate, NextReview, ...).
        self.retrieval = pb.retrieval_pb2_grpc.RetrievalServiceStub(self._channels["retrieval"])
        self.firewall = pb.firewall_pb2_grpc.FirewallServiceStub(self._channels["firewall"])
        self.telemetry = pb.telemetry_pb2_grpc.TelemetryServiceStub(self._channels["telemetry"])
        self.analyst = pb.analyst_pb2_grpc.AnalystServiceStub(self._channels["analyst"])

    # Lifetime.

    def close(self) -> None:
        """Closes the channels."""
        for channel in self._channels.values():
            channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # Retrieval.

    def ask(
        self,
        text: str,
        *,
        min_sequence: int = 0,
        as_of: Optional[datetime] = None,
        design: str = "",
        scope: str = "",
    ) -> Answer:
        """Asks a natural-language question. ``min_sequence`` (an ``EventAck.sequence``) waits
        until the graph has applied that event: read your own write. ``scope``
        (``region=EU``) names where the answer should hold; empty: the scope the question
        names, else everywhere (``NEEDS_SCOPE`` when the value differs by scope)."""
        request = pb.retrieval_pb2.AskRequest(
            caller=self._caller,
            text=text,
            min_sequence=min_sequence,
            as_of=_timestamp(as_of),
            design=design,
            scope=scope,
        )
        return Answer._from_pb(self._call("Ask", self.retrieval.Ask, request))

    def lookup(
        self,
        entity: str,
        predicate_path: Sequence[str],
        *,
        min_sequence: int = 0,
        as_of: Optional[datetime] = None,
        query: str = "",
        scope: str = "",
    ) -> Answer:
        """Follows ``predicate_path`` from ``entity`` (canonical id, name or alias), in
        ``scope`` (``region=EU``; empty: everywhere)."""
        request = pb.retrieval_pb2.LookupRequest(
            caller=self._caller,
            entity=entity,
            predicate_path=list(predicate_path),
            min_sequence=min_sequence,
            as_of=_timestamp(as_of),
            query=query,
            scope=scope,
        )
        return Answer._from_pb(self._call("Lookup", self.retrieval.Lookup, request))

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        ranking: str = "",
        origins: Sequence[str] = (),
        prefix: str = "",
        scope: str = "",
        as_of: Optional[datetime] = None,
        min_sequence: int = 0,
    ) -> SearchResult:
        """The ``k`` passages (at most 100) that best match ``query``, among the pages the
        caller may read, of ``origins`` (any when empty), whose id starts with ``prefix``, that
        hold in ``scope`` (``region=EU``), as of ``as_of``; each with its citation and the
        entities it names. ``ranking`` is ``bm25``, ``dense`` or ``fused`` (empty: the
        service's default)."""
        request = pb.retrieval_pb2.SearchRequest(
            caller=self._caller,
            query=query,
            k=k,
            ranking=_ranking(ranking),
            origins=list(origins),
            page_prefix=prefix,
            scope=scope,
            as_of=_timestamp(as_of),
            min_sequence=min_sequence,
        )
        return SearchResult._from_pb(self._call("Search", self.retrieval.Search, request))

    def resolve_citation(self, passage: Passage, *, min_sequence: int = 0) -> Citation:
        """What a passage an answer cited (``Answer.passages``) is now: current, moved,
        revised (with its text now) or gone. A page the caller may not read is ``NotFound``."""
        request = pb.retrieval_pb2.ResolveCitationRequest(
            caller=self._caller,
            source_id=passage.source_id,
            source_version=passage.source_version,
            chunk_hash=passage.chunk_hash,
            start=passage.start,
            end=passage.end,
            min_sequence=min_sequence,
        )
        return Citation._from_pb(
            self._call("ResolveCitation", self.retrieval.ResolveCitation, request)
        )

    # Firewall.

    def validate(
        self,
        text: Optional[str] = None,
        *,
        claims: Optional[Sequence[Claim]] = None,
        domain: str = "",
        risk: RiskLevel = RiskLevel.STANDARD,
        as_of: Optional[datetime] = None,
    ) -> Validation:
        """Validates an answer's ``text``, or structured ``claims`` (exactly one of the two)."""
        if (text is None) == (claims is None):
            raise ValueError("validate takes text or claims, exactly one")
        request = pb.firewall_pb2.ValidateRequest(
            caller=self._caller,
            context=pb.firewall_pb2.ValidationContext(
                domain=domain, risk=pb.firewall_pb2.RiskLevel.Value(f"RISK_LEVEL_{risk.value}")
            ),
            as_of=_timestamp(as_of),
        )
        if text is not None:
            request.text = text
        else:
            request.claims.CopyFrom(pb.firewall_pb2.ClaimList(claims=[c._to_pb() for c in claims]))
        return Validation._from_pb(self._call("Validate", self.firewall.Validate, request))

    # Telemetry.

    def report_signal(
        self,
        type: SignalType,
        query: str,
        *,
        agent_id: str,
        entity: str = "",
        relationship: str = "",
        sector: str = "",
        idempotency_key: Optional[str] = None,
        observed_at: Optional[datetime] = None,
    ) -> SignalAck:
        """Reports a failure signal (one of ``entity``, ``relationship`` or ``sector`` is
        required). Without an ``idempotency_key`` a fresh one is made: pass your own to make a
        retry a duplicate."""
        request = pb.telemetry_pb2.Signal(
            caller=self._caller,
            type=pb.common_pb2.SignalType.Value(f"SIGNAL_TYPE_{SignalType(type).value}"),
            query=query,
            entity=entity,
            relationship=relationship,
            sector=sector,
            agent_id=agent_id,
            idempotency_key=idempotency_key or uuid.uuid4().hex,
            observed_at=_timestamp(observed_at),
        )
        ack = self._call("ReportSignal", self.telemetry.ReportSignal, request)
        return SignalAck(
            duplicate=ack.duplicate,
            severity=Severity(_enum_name(pb.common_pb2.Severity, ack.severity, "SEVERITY_")),
        )

    def push_event(
        self,
        kind: EventKind,
        *,
        idempotency_key: str = "",
        at: Optional[datetime] = None,
    ) -> EventAck:
        """Pushes an event (``DocUpsert``, ``RecordSet``, ``OntologySet``... or a generated kind
        message such as ``HrEvent``). Acknowledged once it is in the intake log; pass the
        returned ``sequence`` as ``min_sequence`` to read it back. Retry an UNAVAILABLE with the
        same ``idempotency_key``."""
        name, message = event_field(kind)
        request = pb.telemetry_pb2.Event(
            caller=self._caller, idempotency_key=idempotency_key, at=_timestamp(at)
        )
        getattr(request, name).CopyFrom(message)
        ack = self._call("PushEvent", self.telemetry.PushEvent, request)
        return EventAck(sequence=ack.sequence, duplicate=ack.duplicate)

    # Plumbing.

    def _call(self, rpc: str, method, request):
        metadata = [("authorization", f"Bearer {self._token}")] if self._token else None
        try:
            return method(request, metadata=metadata, timeout=self._timeout)
        except grpc.RpcError as error:
            raise from_rpc_error(rpc, error) from None


class _Address:
    """A service address: the gRPC target and whether it is dialled over TLS."""

    def __init__(self, host: str, port: int, tls: bool, service: str):
        self.host, self.port, self.tls, self.service = host, port, tls, service

    @classmethod
    def parse(cls, url: str, service: str) -> "_Address":
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{service}: expected http://HOST[:PORT] or https://HOST[:PORT], got {url!r}")
        return cls(parts.hostname, parts.port or DEFAULT_PORTS[service], parts.scheme == "https", service)

    def sibling(self, service: str) -> "_Address":
        """The same host at ``service``'s place in the default layout, relative to this port."""
        port = self.port + DEFAULT_PORTS[service] - DEFAULT_PORTS[self.service]
        return _Address(self.host, port, self.tls, service)

    @property
    def target(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def _read(path: Optional[str]) -> Optional[bytes]:
    if path is None:
        return None
    with open(path, "rb") as f:
        return f.read()


def _ranking(name: str) -> int:
    """``bm25``, ``dense`` or ``fused`` as the proto's PassageRanking; empty: unspecified."""
    if not name:
        return pb.retrieval_pb2.PASSAGE_RANKING_UNSPECIFIED
    try:
        return pb.retrieval_pb2.PassageRanking.Value("PASSAGE_RANKING_" + name.upper())
    except ValueError:
        raise ValueError(f"ranking {name!r} is not bm25, dense or fused") from None
