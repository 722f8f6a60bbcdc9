"""A typed Python client of ontoloop's gRPC API.

    from ontoloop_client import Client

    with Client("http://127.0.0.1:50051", token) as ontoloop:
        answer = ontoloop.ask("How much does the Pro plan cost?")
        print(answer.value, answer.status.value, [h.code for h in answer.hedges])

The stubs under ``ontoloop_client.pb`` are generated from the repository's proto/ when the
package is built; the Client's methods convert them to the dataclasses of ``types``.

``ontoloop_client.langchain`` (the ``langchain`` extra) adapts the client to LangChain: a
retriever and a firewall step. It is not imported here, so the client needs no LangChain.
"""

from .client import DEFAULT_PORTS, Client
from .errors import (
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    NotFound,
    OntoloopError,
    PermissionDenied,
    ResourceExhausted,
    Unauthenticated,
    Unavailable,
)
from .types import (
    Answer,
    AnswerStatus,
    BlockReason,
    Citation,
    CitationStatus,
    Claim,
    ClaimStep,
    ClaimVerdict,
    Coverage,
    DocUpsert,
    EventAck,
    Evidence,
    GraphMaintain,
    Hedge,
    Hop,
    MentionedEntity,
    OntologySet,
    Passage,
    RecordRename,
    RecordSet,
    RiskLevel,
    ScopedValue,
    SearchHit,
    SearchResult,
    Severity,
    SignalAck,
    SignalType,
    Validation,
    Verdict,
    WorkItemUpsert,
)

__all__ = [
    "Answer",
    "AnswerStatus",
    "BlockReason",
    "Citation",
    "CitationStatus",
    "Claim",
    "ClaimStep",
    "ClaimVerdict",
    "Client",
    "Coverage",
    "DEFAULT_PORTS",
    "DeadlineExceeded",
    "DocUpsert",
    "EventAck",
    "Evidence",
    "FailedPrecondition",
    "GraphMaintain",
    "Hedge",
    "Hop",
    "InvalidArgument",
    "MentionedEntity",
    "NotFound",
    "OntologySet",
    "OntoloopError",
    "Passage",
    "PermissionDenied",
    "RecordRename",
    "RecordSet",
    "ResourceExhausted",
    "RiskLevel",
    "ScopedValue",
    "SearchHit",
    "SearchResult",
    "Severity",
    "SignalAck",
    "SignalType",
    "Unauthenticated",
    "Unavailable",
    "Validation",
    "Verdict",
    "WorkItemUpsert",
]
