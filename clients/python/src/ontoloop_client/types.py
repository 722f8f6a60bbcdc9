"""The client's dataclasses: what the services answer (answers with hedges and provenance,
verdicts, acknowledgements) and the events and claims a caller sends, converted from and to the
generated protobuf messages at this edge only."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Optional, Sequence, Union

from ._proto.ontoloop.v1 import common_pb2, firewall_pb2, retrieval_pb2, telemetry_pb2


class AnswerStatus(str, enum.Enum):
    """How much an answer can be trusted."""

    UNSPECIFIED = "UNSPECIFIED"
    #: A value with no reason for doubt.
    ANSWERED = "ANSWERED"
    #: A value with at least one computed hedge.
    ANSWERED_POSSIBLY_STALE = "ANSWERED_POSSIBLY_STALE"
    #: Sources of equal authority and time disagree; every value is in ``values``.
    CONFLICT_OPEN = "CONFLICT_OPEN"
    #: Nothing supports an answer; see ``abstain_reason``.
    ABSTAINED = "ABSTAINED"
    #: No slot of the ontology answers the question; ``passages`` holds text to read, cited.
    ANSWERED_PASSAGES = "ANSWERED_PASSAGES"
    #: The value differs by scope (region, plan...) and none was named; ``scoped`` lists each
    #: scope with its value: ask again with ``scope``.
    NEEDS_SCOPE = "NEEDS_SCOPE"


class CitationStatus(str, enum.Enum):
    """What a passage cited earlier is now."""

    UNSPECIFIED = "UNSPECIFIED"
    #: The same text at the same place.
    CURRENT = "CURRENT"
    #: The same text elsewhere on the page or on another page.
    MOVED = "MOVED"
    #: The passage was changed; ``passage`` is its text now.
    REVISED = "REVISED"
    #: The passage, or its page, was deleted.
    GONE = "GONE"


class Verdict(str, enum.Enum):
    """Pass or block."""

    UNSPECIFIED = "UNSPECIFIED"
    PASS = "PASS"
    BLOCK = "BLOCK"


class RiskLevel(str, enum.Enum):
    """Risk levels of a validation; each has its own confidence threshold."""

    STANDARD = "UNSPECIFIED"
    HIGH = "HIGH"
    EXPLORATORY = "EXPLORATORY"


class SignalType(str, enum.Enum):
    """Kinds of failure signal."""

    ENTITY_MISSING = "ENTITY_MISSING"
    RELATIONSHIP_UNKNOWN = "RELATIONSHIP_UNKNOWN"
    TEMPORAL_STALE = "TEMPORAL_STALE"
    CONFIDENCE_DROP = "CONFIDENCE_DROP"
    QUERY_PATTERN = "QUERY_PATTERN"


class Severity(str, enum.Enum):
    """Severity the intake computed from frequency and affected agents."""

    UNSPECIFIED = "UNSPECIFIED"
    LOW = "LOW"
    MEDIUM = "MEDIUM"
    HIGH = "HIGH"
    CRITICAL = "CRITICAL"


def _enum_name(enum_type, value: int, prefix: str) -> str:
    """The name of a protobuf enum value without its prefix; UNSPECIFIED for an unknown number
    (a newer server)."""
    try:
        return enum_type.Name(value).removeprefix(prefix)
    except ValueError:
        return "UNSPECIFIED"


def _time(message, name: str) -> Optional[datetime]:
    """A timestamp field as an aware UTC datetime; None when absent."""
    if not message.HasField(name):
        return None
    return getattr(message, name).ToDatetime(tzinfo=timezone.utc)


def _timestamp(when: Optional[datetime]):
    if when is None:
        return None
    from google.protobuf import timestamp_pb2

    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(when if when.tzinfo else when.replace(tzinfo=timezone.utc))
    return stamp


@dataclass(frozen=True)
class Evidence:
    """Where a value came from: a source at an immutable version, its origin and authority."""

    source_id: str
    source_version: int
    origin: str
    authority: int
    value: str
    valid_from: Optional[datetime]
    valid_to: Optional[datetime]
    extracted_at: Optional[datetime]
    extractor: str
    confidence: float
    excerpt: str

    @classmethod
    def _from_pb(cls, e: common_pb2.Evidence) -> "Evidence":
        return cls(
            source_id=e.source_id,
            source_version=e.source_version,
            origin=e.origin,
            authority=e.authority,
            value=e.value,
            valid_from=_time(e, "valid_from"),
            valid_to=_time(e, "valid_to"),
            extracted_at=_time(e, "extracted_at"),
            extractor=e.extractor,
            confidence=e.confidence,
            excerpt=e.excerpt,
        )

    def __str__(self) -> str:
        return f"{self.source_id}@{self.source_version} ({self.origin}, authority {self.authority})"


@dataclass(frozen=True)
class Hedge:
    """A computed reason for caution: ``code`` (e.g. ``low_authority_only``), a message, and the
    source it concerns, if any."""

    code: str
    message: str
    source_id: str

    @classmethod
    def _from_pb(cls, h: common_pb2.Hedge) -> "Hedge":
        return cls(code=h.code, message=h.message, source_id=h.source_id)


@dataclass(frozen=True)
class Hop:
    """One step of a (multi-hop) answer, with its own provenance."""

    entity: str
    predicate: str
    value: str
    evidence: list[Evidence]

    @classmethod
    def _from_pb(cls, h: retrieval_pb2.Hop) -> "Hop":
        return cls(
            entity=h.entity,
            predicate=h.predicate,
            value=h.value,
            evidence=[Evidence._from_pb(e) for e in h.evidence],
        )


@dataclass(frozen=True)
class Passage:
    """A passage of a page given as an answer, with its citation: the page, the version it was
    cut from, the hash of its words and its character span in that version."""

    source_id: str
    source_version: int
    title: str
    origin: str
    headings: list[str]
    text: str
    chunk_hash: str
    start: int
    end: int
    score: float
    #: Cosine similarity of the question and the passage by the sentence encoder (``None``
    #: when the service runs without the model).
    similarity: Optional[float] = None

    @classmethod
    def _from_pb(cls, p: retrieval_pb2.Passage) -> "Passage":
        return cls(
            source_id=p.source_id,
            source_version=p.source_version,
            title=p.title,
            origin=p.origin,
            headings=list(p.headings),
            text=p.text,
            chunk_hash=p.chunk_hash,
            start=p.start,
            end=p.end,
            score=p.score,
            similarity=p.similarity if p.HasField("similarity") else None,
        )


@dataclass(frozen=True)
class MentionedEntity:
    """An entity of the graph a passage names."""

    id: str
    name: str
    #: Its type; empty when unknown.
    entity_type: str

    @classmethod
    def _from_pb(cls, e: retrieval_pb2.MentionedEntity) -> "MentionedEntity":
        return cls(id=e.id, name=e.name, entity_type=e.entity_type)


@dataclass(frozen=True)
class SearchHit:
    """A passage ``search`` found, with the entities it names."""

    passage: Passage
    entities: list[MentionedEntity]

    @classmethod
    def _from_pb(cls, h: retrieval_pb2.SearchHit) -> "SearchHit":
        return cls(
            passage=Passage._from_pb(h.passage),
            entities=[MentionedEntity._from_pb(e) for e in h.entities],
        )


@dataclass(frozen=True)
class SearchResult:
    """What ``search`` found, best first, and the ranking used (``BM25``, ``DENSE`` or
    ``FUSED``)."""

    hits: list[SearchHit]
    ranking: str
    applied_sequence: int

    @classmethod
    def _from_pb(cls, r: retrieval_pb2.SearchResponse) -> "SearchResult":
        return cls(
            hits=[SearchHit._from_pb(h) for h in r.hits],
            ranking=_enum_name(retrieval_pb2.PassageRanking, r.ranking, "PASSAGE_RANKING_"),
            applied_sequence=r.applied_sequence,
        )


@dataclass(frozen=True)
class Citation:
    """What ``resolve_citation`` found: the status and the passage now (``None`` when gone; its
    ``score`` is 0)."""

    status: CitationStatus
    passage: Optional[Passage]
    applied_sequence: int

    @classmethod
    def _from_pb(cls, r: retrieval_pb2.CitationResolution) -> "Citation":
        return cls(
            status=CitationStatus(
                _enum_name(retrieval_pb2.CitationStatus, r.status, "CITATION_STATUS_")
            ),
            passage=Passage._from_pb(r.passage) if r.HasField("passage") else None,
            applied_sequence=r.applied_sequence,
        )


@dataclass(frozen=True)
class Answer:
    """An answer to ``ask`` or ``lookup``: the value, its status, the hedges, and the evidence of
    the final value (winner first) and of every hop."""

    status: AnswerStatus
    value: str
    values: list[str]
    hedges: list[Hedge]
    hops: list[Hop]
    evidence: list[Evidence]
    abstain_reason: str
    entity: str
    predicate_path: list[str]
    applied_sequence: int
    passages: list[Passage] = field(default_factory=list)
    #: Values announced to take effect later (``valid_from`` is when), soonest first; ``value``
    #: stays the value in effect until then.
    upcoming: list[Evidence] = field(default_factory=list)
    #: ``NEEDS_SCOPE``: each scope with its value, the widest first.
    scoped: list["ScopedValue"] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        """True when there is a value (hedged or not)."""
        return self.status in (AnswerStatus.ANSWERED, AnswerStatus.ANSWERED_POSSIBLY_STALE)

    @classmethod
    def _from_pb(cls, a: retrieval_pb2.Answer) -> "Answer":
        return cls(
            status=AnswerStatus(_enum_name(retrieval_pb2.AnswerStatus, a.status, "ANSWER_STATUS_")),
            value=a.value,
            values=list(a.values),
            hedges=[Hedge._from_pb(h) for h in a.hedges],
            hops=[Hop._from_pb(h) for h in a.hops],
            evidence=[Evidence._from_pb(e) for e in a.evidence],
            abstain_reason=a.abstain_reason,
            entity=a.entity,
            predicate_path=list(a.predicate_path),
            applied_sequence=a.applied_sequence,
            passages=[Passage._from_pb(p) for p in a.passages],
            upcoming=[Evidence._from_pb(e) for e in a.upcoming],
            scoped=[ScopedValue._from_pb(v) for v in a.scoped],
        )


@dataclass(frozen=True)
class ScopedValue:
    """A value that holds in one scope: ``scope`` is ``key=value`` pairs joined by ``, ``
    (``region=EU``), empty for everywhere no narrower scope says otherwise."""

    scope: str
    value: str
    evidence: list[Evidence]

    @classmethod
    def _from_pb(cls, v) -> "ScopedValue":
        return cls(
            scope=v.scope, value=v.value, evidence=[Evidence._from_pb(e) for e in v.evidence]
        )


@dataclass(frozen=True)
class ClaimStep:
    """One step of a multi-hop claim."""

    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class Claim:
    """A structured claim: subject, predicate, object, or a chain of steps."""

    subject: str = ""
    predicate: str = ""
    object: str = ""
    chain: Sequence[ClaimStep] = ()
    #: Where the claim holds (``region=EU``); empty: everywhere.
    scope: str = ""

    def _to_pb(self) -> firewall_pb2.Claim:
        return firewall_pb2.Claim(
            subject=self.subject,
            predicate=self.predicate,
            object=self.object,
            chain=[
                firewall_pb2.ClaimStep(subject=s.subject, predicate=s.predicate, object=s.object)
                for s in self.chain
            ],
            scope=self.scope,
        )

    @classmethod
    def _from_pb(cls, c: firewall_pb2.Claim) -> "Claim":
        return cls(
            subject=c.subject,
            predicate=c.predicate,
            object=c.object,
            chain=tuple(ClaimStep(s.subject, s.predicate, s.object) for s in c.chain),
            scope=c.scope,
        )


@dataclass(frozen=True)
class BlockReason:
    """Why a claim was blocked: a rule ``code`` (``contradicted``, ``not_in_graph``, ...) and
    a message."""

    code: str
    message: str


@dataclass(frozen=True)
class ClaimVerdict:
    """The verdict on one claim, with every rule that blocked it."""

    claim: Claim
    verdict: Verdict
    reasons: list[BlockReason]
    sentence: str


@dataclass(frozen=True)
class Coverage:
    """How much of a text could be checked."""

    sentences: int
    checkable: int
    unrecognised: int


@dataclass(frozen=True)
class Validation:
    """The firewall's result: BLOCK when any claim is blocked."""

    overall: Verdict
    verdicts: list[ClaimVerdict]
    coverage: Coverage

    @property
    def passed(self) -> bool:
        return self.overall is Verdict.PASS

    @property
    def reasons(self) -> list[BlockReason]:
        """Every reason of every blocked claim, in order."""
        return [r for v in self.verdicts for r in v.reasons]

    @classmethod
    def _from_pb(cls, r: firewall_pb2.ValidateResponse) -> "Validation":
        verdict = lambda v: Verdict(_enum_name(firewall_pb2.Verdict, v, "VERDICT_"))  # noqa: E731
        return cls(
            overall=verdict(r.overall),
            verdicts=[
                ClaimVerdict(
                    claim=Claim._from_pb(v.claim),
                    verdict=verdict(v.verdict),
                    reasons=[BlockReason(x.code, x.message) for x in v.reasons],
                    sentence=v.sentence,
                )
                for v in r.verdicts
            ],
            coverage=Coverage(
                r.coverage.sentences, r.coverage.checkable, r.coverage.unrecognised
            ),
        )


@dataclass(frozen=True)
class SignalAck:
    """The intake's answer to a signal."""

    duplicate: bool
    severity: Severity


@dataclass(frozen=True)
class EventAck:
    """The intake's answer to an event: pass ``sequence`` as ``min_sequence`` to read your own
    write."""

    sequence: int
    duplicate: bool


# Events. Each is one `kind` of the protobuf Event; HR events and docs pushes are sent as their
# generated messages (`ontoloop_client.pb.telemetry_pb2.HrEvent`, `DocsPush`).


@dataclass(frozen=True)
class DocUpsert:
    """A page is created or gets a new version: in effect from the event's time, or from
    ``effective_from`` when it is published ahead of the day it takes effect (the version
    before stays the page's text until then, and answers note the change to come)."""

    doc_id: str
    body: str
    origin: str
    title: str = ""
    acl: Sequence[str] = ()
    hold: bool = False
    confidence: float = 0.0
    effective_from: Optional[datetime] = None

    def _to_pb(self):
        return "doc_upsert", telemetry_pb2.DocUpsert(
            doc_id=self.doc_id,
            title=self.title or self.doc_id,
            origin=self.origin,
            body=self.body,
            acl=list(self.acl),
            hold=self.hold,
            confidence=self.confidence,
            effective_from=_timestamp(self.effective_from),
        )


@dataclass(frozen=True)
class RecordSet:
    """The system of record states the value of a slot: current from the event's time, or from
    ``effective_from`` when the change is announced for later (the value in effect until then
    stays current, and answers note the announced one beside it)."""

    source: str
    entity: str
    predicate: str
    value: str
    effective_from: Optional[datetime] = None
    #: Where the value holds (``region=EU``); empty: everywhere.
    scope: str = ""

    def _to_pb(self):
        return "record_set", telemetry_pb2.RecordSet(
            source=self.source,
            entity=self.entity,
            predicate=self.predicate,
            value=self.value,
            effective_from=_timestamp(self.effective_from),
            scope=self.scope,
        )


@dataclass(frozen=True)
class RecordRename:
    """The system of record renames an entity; the old name stays an alias."""

    source: str
    old: str
    new: str

    def _to_pb(self):
        return "record_rename", telemetry_pb2.RecordRename(
            source=self.source, old=self.old, new=self.new
        )


@dataclass(frozen=True)
class OntologySet:
    """Sets the tenant's ontology (needs the admin role): the JSON of a world file's ontology."""

    ontology_json: str

    def _to_pb(self):
        return "ontology_set", telemetry_pb2.OntologySet(ontology_json=self.ontology_json)


@dataclass(frozen=True)
class GraphMaintain:
    """Runs graph maintenance (needs the admin role): ``patch``, ``rebuild`` or ``repair``."""

    mode: str

    def _to_pb(self):
        return "graph_maintain", telemetry_pb2.GraphMaintain(mode=self.mode)


@dataclass(frozen=True)
class WorkItemUpsert:
    """A work item (ticket, incident, task) is created or replaced."""

    item_id: str
    title: str
    severity: str
    scope: str
    source_type: str
    assignee: str = ""
    service: str = ""
    created_at: Optional[datetime] = None
    acl: Sequence[str] = field(default_factory=tuple)

    def _to_pb(self):
        return "work_item", telemetry_pb2.WorkItemUpsert(
            item_id=self.item_id,
            title=self.title,
            assignee=self.assignee,
            service=self.service,
            severity=self.severity,
            scope=self.scope,
            source_type=self.source_type,
            created_at=_timestamp(self.created_at),
            acl=list(self.acl),
        )


EventKind = Union[
    DocUpsert,
    RecordSet,
    RecordRename,
    OntologySet,
    GraphMaintain,
    WorkItemUpsert,
    telemetry_pb2.HrEvent,
    telemetry_pb2.DocsPush,
]

# The generated messages a caller may pass as they are, by the Event field that carries them.
_RAW_KINDS = {
    telemetry_pb2.DocUpsert: "doc_upsert",
    telemetry_pb2.RecordSet: "record_set",
    telemetry_pb2.RecordRename: "record_rename",
    telemetry_pb2.HrEvent: "hr",
    telemetry_pb2.DocsPush: "docs_push",
    telemetry_pb2.OntologySet: "ontology_set",
    telemetry_pb2.GraphMaintain: "graph_maintain",
    telemetry_pb2.WorkItemUpsert: "work_item",
}


def event_field(kind) -> tuple[str, object]:
    """The Event oneof field and message for an event dataclass or a generated kind message."""
    if hasattr(kind, "_to_pb"):
        return kind._to_pb()
    name = _RAW_KINDS.get(type(kind))
    if name is None:
        raise TypeError(f"not an event kind: {type(kind).__name__}")
    return name, kind
