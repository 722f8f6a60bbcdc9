"""LangChain adapters: ontoloop as an agent's retriever, and its firewall on a chain's output.

Needs the ``langchain`` extra (``pip install './clients/python[langchain]'``, which brings
``langchain-core`` 0.3 or later); ``import ontoloop_client`` alone never imports LangChain.

    from ontoloop_client import Client
    from ontoloop_client.langchain import OntoloopFirewall, OntoloopRetriever, validate_output

    ontoloop = Client("http://127.0.0.1:50051", token)
    retriever = OntoloopRetriever(client=ontoloop)
    docs = retriever.invoke("How much does the Pro plan cost?")
    docs[0].metadata["source_id"], docs[0].metadata["status"], docs[0].metadata["hedges"]
    if not docs:
        print(retriever.last_answer.abstain_reason)   # ontoloop abstained, and says why

- ``OntoloopRetriever`` asks ontoloop (``Client.ask``) and returns ``Document``s: the answer's
  value with the evidence that won (``kind = "answer"``; one per value when a conflict stays
  open, one per scope when the value differs by scope), then each passage offered
  (``kind = "passage"``). Every Document carries the citation and the answer's ``status``,
  ``hedges`` and ``abstain_reason`` in ``metadata`` (see ``answer_to_documents``).
- An abstention returns no Document: the reason is in ``retriever.last_answer.abstain_reason``
  (the whole ``Answer`` of the last call) and is logged at INFO by the ``ontoloop_client.langchain``
  logger.
- ``validate_output(client, text)`` runs the firewall (``Client.validate``) on a chain's output
  and returns the ``Validation``; ``OntoloopFirewall(client=...)`` is the same as a ``Runnable``
  step: it passes its input on when the firewall passes it, and raises ``OutputBlocked`` (with
  the ``Validation`` and its ``reasons``) when it blocks.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Optional, Union

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.messages import BaseMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import RunnableConfig, RunnableSerializable
    from pydantic import ConfigDict, PrivateAttr
except ImportError as error:  # the extra is not installed
    raise ImportError(
        "ontoloop_client.langchain needs langchain-core 0.3 or later, which the base client "
        "does not install: pip install 'ontoloop-client[langchain]' (from a checkout: "
        f"pip install './clients/python[langchain]'); the import failed with: {error}"
    ) from error

from .client import Client
from .types import Answer, AnswerStatus, BlockReason, Evidence, Passage, RiskLevel, Validation

__all__ = [
    "OntoloopFirewall",
    "OntoloopRetriever",
    "OutputBlocked",
    "answer_to_documents",
    "validate_output",
]

logger = logging.getLogger(__name__)


# Documents.


def _iso(when: Optional[datetime]) -> Optional[str]:
    return when.isoformat() if when is not None else None


def _source(e: Evidence) -> dict[str, Any]:
    """One piece of evidence as plain metadata (JSON-serialisable)."""
    source = {
        "source_id": e.source_id,
        "source_version": e.source_version,
        "origin": e.origin,
        "authority": e.authority,
        "value": e.value,
        "confidence": e.confidence,
    }
    for key, when in (("valid_from", e.valid_from), ("valid_to", e.valid_to)):
        if when is not None:
            source[key] = _iso(when)
    return source


def _common(answer: Answer) -> dict[str, Any]:
    """What every Document of an answer carries: its status, hedges and abstain reason."""
    return {
        "status": answer.status.value,
        "hedges": [
            {"code": h.code, "message": h.message, "source_id": h.source_id}
            for h in answer.hedges
        ],
        "abstain_reason": answer.abstain_reason,
        "applied_sequence": answer.applied_sequence,
    }


def _value_document(
    answer: Answer, value: str, evidence: list[Evidence], scope: Optional[str] = None
) -> Document:
    winner = evidence[0] if evidence else None
    excerpt = winner.excerpt if winner else ""
    # A few lines a model reads: the value, the sentence it was read from (when the extractor
    # kept one), the path followed or the source, and the hedges.
    if scope is None:
        lines = [value]
    elif scope:
        lines = [f"{value} (in {scope})"]
    else:
        lines = [f"{value} (where no narrower scope says otherwise)"]
    if excerpt and excerpt != value:
        lines.append(excerpt)
    if value == answer.value and answer.hops:
        for hop in answer.hops:
            cited = f" [{hop.evidence[0]}]" if hop.evidence else ""
            lines.append(f"{hop.entity} -{hop.predicate}-> {hop.value}{cited}")
    elif winner is not None:
        lines.append(f"source {winner}")
    lines.extend(f"hedge {h.code}: {h.message}" for h in answer.hedges)
    content = "\n".join(lines)
    metadata: dict[str, Any] = {"kind": "answer", "value": value}
    if winner is not None:
        metadata.update(_source(winner))
        metadata["value"] = value
        metadata["excerpt"] = excerpt
    metadata.update(
        entity=answer.entity,
        predicate_path=list(answer.predicate_path),
        sources=[_source(e) for e in evidence],
        hops=[
            {
                "entity": h.entity,
                "predicate": h.predicate,
                "value": h.value,
                "sources": [_source(e) for e in h.evidence],
            }
            for h in answer.hops
        ],
    )
    if answer.upcoming:
        metadata["upcoming"] = [_source(e) for e in answer.upcoming]
    if scope is not None:
        metadata["scope"] = scope
    metadata.update(_common(answer))
    return Document(page_content=content, metadata=metadata)


def _passage_document(answer: Answer, p: Passage) -> Document:
    metadata: dict[str, Any] = {
        "kind": "passage",
        "source_id": p.source_id,
        "source_version": p.source_version,
        "title": p.title,
        "origin": p.origin,
        "headings": list(p.headings),
        "chunk_hash": p.chunk_hash,
        "start": p.start,
        "end": p.end,
        "score": p.score,
    }
    if p.similarity is not None:
        metadata["similarity"] = p.similarity
    metadata.update(_common(answer))
    return Document(page_content=p.text, metadata=metadata)


def answer_to_documents(answer: Answer) -> list[Document]:
    """An ontoloop ``Answer`` as LangChain Documents; what ``OntoloopRetriever`` returns.

    First the value (``metadata["kind"] == "answer"``): ``page_content`` is the value and, on
    the next line, the excerpt of the evidence that won; ``metadata`` holds that evidence's
    citation (``source_id``, ``source_version``, ``origin``, ``authority``, ``confidence``,
    ``valid_from``, ``excerpt``), the ``entity`` and ``predicate_path`` asked, every piece of
    evidence in ``sources`` (winner first), each hop with its own ``sources``, and values
    announced for later in ``upcoming``. A conflict left open (``CONFLICT_OPEN``) gives one such
    Document per value; a value that differs by scope (``NEEDS_SCOPE``) one per scope, with its
    ``scope``.

    Then each passage offered (``kind == "passage"``), best first: ``page_content`` is the
    passage's text; ``metadata`` its page (``source_id``, ``source_version``, ``title``,
    ``origin``), ``headings``, ``chunk_hash`` and span (``start``, ``end``): what
    ``Client.resolve_citation`` takes.

    Every Document also carries the answer's ``status`` (``ANSWERED``,
    ``ANSWERED_POSSIBLY_STALE``, ...), its ``hedges`` (``code``, ``message``, ``source_id``),
    ``abstain_reason`` and ``applied_sequence``. An abstention gives no Document.
    """
    documents: list[Document] = []
    if answer.status is AnswerStatus.NEEDS_SCOPE:
        for scoped in answer.scoped:
            documents.append(
                _value_document(answer, scoped.value, list(scoped.evidence), scope=scoped.scope)
            )
    elif answer.status is AnswerStatus.CONFLICT_OPEN and answer.values:
        for value in answer.values:
            evidence = [e for e in answer.evidence if e.value == value] or list(answer.evidence)
            documents.append(_value_document(answer, value, evidence))
    elif answer.value and answer.status is not AnswerStatus.ABSTAINED:
        documents.append(_value_document(answer, answer.value, list(answer.evidence)))
    documents.extend(_passage_document(answer, p) for p in answer.passages)
    return documents


# The retriever.


class OntoloopRetriever(BaseRetriever):
    """ontoloop as a LangChain retriever: ``invoke(question)`` asks ontoloop and returns the
    answer as Documents (see ``answer_to_documents``), the citation, status and hedges in
    ``metadata``.

    ``client`` is an ``ontoloop_client.Client`` (its token decides the tenant and what may be
    read). ``scope`` (``region=EU``), ``as_of`` and ``min_sequence`` (an ``EventAck.sequence``:
    read your own write) are passed to every ``ask``.

    An abstention returns no Document. ``last_answer`` is the whole ``Answer`` of the last
    call (``status``, ``abstain_reason``, ``hedges``...), and an abstention's reason is logged at
    INFO by the ``ontoloop_client.langchain`` logger. ``last_answer`` is this retriever's last
    call only: a retriever shared by concurrent callers should be read with
    ``answer_to_documents(client.ask(...))`` instead.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client
    scope: str = ""
    as_of: Optional[datetime] = None
    min_sequence: int = 0

    _last_answer: Optional[Answer] = PrivateAttr(default=None)

    @property
    def last_answer(self) -> Optional[Answer]:
        """The ``Answer`` of the last call; None before the first."""
        return self._last_answer

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[Document]:
        answer = self.client.ask(
            query, min_sequence=self.min_sequence, as_of=self.as_of, scope=self.scope
        )
        self._last_answer = answer
        if answer.status is AnswerStatus.ABSTAINED:
            logger.info("ontoloop abstained on %r: %s", query, answer.abstain_reason)
        return answer_to_documents(answer)


# The firewall.


def _text(output: Any) -> str:
    """A chain's output as text: a string, a message's text content, or a Document's."""
    if isinstance(output, str):
        return output
    if isinstance(output, BaseMessage):
        content = output.content
        if isinstance(content, str):
            return content
        return "".join(
            part if isinstance(part, str) else str(part.get("text", ""))
            for part in content
            if isinstance(part, str) or part.get("type") == "text"
        )
    if isinstance(output, Document):
        return output.page_content
    raise TypeError(
        f"the firewall checks text: a str, a message or a Document, not {type(output).__name__}"
    )


def validate_output(
    client: Client,
    output: Union[str, BaseMessage, Document],
    *,
    risk: RiskLevel = RiskLevel.STANDARD,
    domain: str = "",
) -> Validation:
    """Runs ontoloop's firewall on a chain's output (a string, a chat model's message or a
    Document): the ``Validation`` with ``passed``, ``overall``, one verdict per claim and every
    blocked claim's ``reasons`` (``code``, ``message``)."""
    return client.validate(_text(output), risk=risk, domain=domain)


class OutputBlocked(Exception):
    """The firewall blocked a chain's output: ``validation`` is its ``Validation``, ``reasons``
    every blocked claim's reasons."""

    def __init__(self, validation: Validation):
        self.validation = validation
        self.reasons: list[BlockReason] = validation.reasons
        blocked = [
            f"{v.sentence or v.claim}: " + "; ".join(f"{r.code} ({r.message})" for r in v.reasons)
            for v in validation.verdicts
            if v.reasons
        ]
        super().__init__("ontoloop's firewall blocked the output: " + " | ".join(blocked))


class OntoloopFirewall(RunnableSerializable[Any, Any]):
    """ontoloop's firewall as a chain step: ``chain | OntoloopFirewall(client=ontoloop)``.

    Its input is a string, a message or a Document. When the firewall passes it, the input is
    returned unchanged; when it blocks, ``OutputBlocked`` is raised (``.reasons``,
    ``.validation``). With ``raise_on_block=False`` the step returns the ``Validation`` instead,
    passed or not (``.passed``, ``.reasons``). ``risk`` and ``domain`` are the validation's
    context."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Client
    risk: RiskLevel = RiskLevel.STANDARD
    domain: str = ""
    raise_on_block: bool = True

    def _check(self, output: Any) -> Any:
        validation = validate_output(self.client, output, risk=self.risk, domain=self.domain)
        if not self.raise_on_block:
            return validation
        if not validation.passed:
            raise OutputBlocked(validation)
        return output

    def invoke(self, input: Any, config: Optional[RunnableConfig] = None, **kwargs: Any) -> Any:
        return self._call_with_config(self._check, input, config)
