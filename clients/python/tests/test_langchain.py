"""ontoloop_client.langchain against a running system (see conftest.py): the retriever asks and
returns Documents with the citation (page, version, origin, authority), the status and the hedges
in their metadata, passages as Documents with their chunk hash and span, an abstention as no
Document with the reason in last_answer, a value that differs by scope as one Document per scope;
it composes in a chain and runs async. The firewall helper and Runnable pass a supported claim and
block an unsupported or contradicted one with the reasons. Importing ontoloop_client does not
import LangChain, and ontoloop_client.langchain without langchain-core says how to install it.
The agent snippet of docs/python-client.md runs as written there.

The world is this module's own: an ontology and pages pushed through the client into a fresh
tenant of the system with auth off (over mTLS), where setting an ontology needs no admin token.
"""

import asyncio
import logging
import re
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

try:
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.runnables import Runnable, RunnableLambda
except ImportError as error:  # a stale environment: make it fail loudly, not skip
    pytest.fail(
        f"langchain-core is not installed ({error}): run scripts/python-client-env.sh "
        "(make test does)",
        pytrace=False,
    )

from conftest import env, urls
from ontoloop_client import AnswerStatus, Client, DocUpsert, OntologySet, RecordSet, Verdict
from ontoloop_client.langchain import (
    OntoloopFirewall,
    OntoloopRetriever,
    OutputBlocked,
    answer_to_documents,
    validate_output,
)

ONTOLOGY = """{"predicates":[
  {"name":"price","subject_type":"plan","object_type":"number",
   "patterns":["The {s} plan costs €{o:number} per month."]}],
  "authority":{"handbook":3,"wiki":2,"forum":1,"default":1}}"""

#: `(id, origin, body)`; "plans" gets a second version below.
PAGES = [
    ("plans", "handbook", "The Pro plan costs €49 per month."),
    ("forum-tip", "forum", "The Starter plan costs €9 per month."),
    (
        "office",
        "wiki",
        "# Office\n\nDesks are free to book.\n\n# Guests\n\nThe guest wifi password is on the fridge.",
    ),
    ("plans", "handbook", "The Pro plan costs €59 per month."),
]


@pytest.fixture(scope="module")
def world():
    """A client of a fresh tenant holding this module's world, and the sequence of its last
    event (a retriever's min_sequence: read your own write)."""
    tls = {
        "ca_file": env("ONTOLOOP_TEST_OPEN_CA_FILE"),
        "client_cert_file": env("ONTOLOOP_TEST_OPEN_CLIENT_CERT"),
        "client_key_file": env("ONTOLOOP_TEST_OPEN_CLIENT_KEY"),
    }
    tenant = f"lc-{uuid.uuid4().hex[:12]}"
    with Client(tenant=tenant, principal="lc-agent", **urls("ONTOLOOP_TEST_OPEN"), **tls) as c:
        c.push_event(OntologySet(ONTOLOGY))
        for doc_id, origin, body in PAGES:
            c.push_event(DocUpsert(doc_id, body, origin=origin))
        c.push_event(RecordSet("record:billing", "Metro plan", "price", "30"))
        last = c.push_event(RecordSet("record:billing", "Metro plan", "price", "25", scope="region=EU"))
        yield c, last.sequence


@pytest.fixture
def retriever(world):
    client, sequence = world
    return OntoloopRetriever(client=client, min_sequence=sequence)


def test_the_retriever_returns_the_value_with_its_citation_status_and_hedges(retriever):
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("How much does the Pro plan cost?")
    assert retriever.last_answer.status is AnswerStatus.ANSWERED, retriever.last_answer
    [doc] = docs
    assert isinstance(doc, Document)
    meta = doc.metadata
    # The citation: the page, the version that states the value (the second), its origin and
    # the origin's authority.
    assert (meta["kind"], meta["source_id"], meta["source_version"]) == ("answer", "plans", 2), meta
    assert (meta["origin"], meta["authority"]) == ("handbook", 3), meta
    assert meta["value"] == "59" and doc.page_content.splitlines()[0] == "59", doc
    # The path followed, with the page cited, for the model to read.
    assert "-price-> 59 [plans@2 (handbook, authority 3)]" in doc.page_content, doc
    assert meta["predicate_path"] == ["price"]
    assert [(s["source_id"], s["source_version"]) for s in meta["sources"]][0] == ("plans", 2)
    assert [(h["predicate"], h["value"]) for h in meta["hops"]] == [("price", "59")]
    # The status and hedges are always there: an answer with no reason for doubt has none.
    assert (meta["status"], meta["hedges"], meta["abstain_reason"]) == ("ANSWERED", [], "")
    assert meta["applied_sequence"] >= retriever.min_sequence


def test_a_hedged_answer_carries_its_hedge_codes_and_messages(retriever):
    [doc] = retriever.invoke("How much does the Starter plan cost?")
    meta = doc.metadata
    assert (meta["value"], meta["source_id"], meta["origin"]) == ("9", "forum-tip", "forum"), meta
    assert meta["status"] == AnswerStatus.ANSWERED_POSSIBLY_STALE.value, meta
    codes = [h["code"] for h in meta["hedges"]]
    assert "low_authority_only" in codes, meta["hedges"]
    assert all(h["message"] for h in meta["hedges"]), meta["hedges"]


def test_offered_passages_are_documents_with_their_citation(retriever):
    [doc] = retriever.invoke("Where is the guest wifi password?")
    assert doc.page_content == "The guest wifi password is on the fridge."
    meta = doc.metadata
    assert (meta["kind"], meta["source_id"], meta["source_version"]) == ("passage", "office", 1)
    assert meta["headings"] == ["Guests"] and meta["origin"] == "wiki", meta
    assert len(meta["chunk_hash"]) == 16 and meta["start"] < meta["end"], meta
    assert meta["status"] == "ANSWERED_PASSAGES" and meta["hedges"] == [], meta
    # The metadata is what resolve_citation takes.
    [passage] = retriever.last_answer.passages
    assert (passage.chunk_hash, passage.start, passage.end) == (
        meta["chunk_hash"],
        meta["start"],
        meta["end"],
    )


def test_an_abstention_is_no_document_and_the_reason_is_kept_and_logged(retriever, caplog):
    with caplog.at_level(logging.INFO, logger="ontoloop_client.langchain"):
        docs = retriever.invoke("How much does the Platinum plan cost?")
    assert docs == []
    answer = retriever.last_answer
    assert answer.status is AnswerStatus.ABSTAINED, answer
    assert "no known entity" in answer.abstain_reason, answer
    assert any(answer.abstain_reason in r.getMessage() for r in caplog.records), caplog.records


def test_a_value_that_differs_by_scope_is_one_document_per_scope(world):
    client, sequence = world
    docs = OntoloopRetriever(client=client, min_sequence=sequence).invoke(
        "How much does the Metro plan cost?"
    )
    assert [(d.metadata["scope"], d.metadata["value"]) for d in docs] == [("", "30"), ("region=EU", "25")]
    assert docs[1].page_content.startswith("25 (in region=EU)\n"), docs[1]
    assert {d.metadata["status"] for d in docs} == {"NEEDS_SCOPE"}
    assert docs[1].metadata["source_id"] == "record:billing"
    eu = OntoloopRetriever(client=client, scope="region=EU").invoke("How much does the Metro plan cost?")
    assert [d.metadata["value"] for d in eu] == ["25"], eu


def test_the_retriever_composes_in_a_chain_and_runs_async(retriever):
    def cite(docs):
        return "; ".join(
            f"{d.page_content.splitlines()[0]} [{d.metadata['source_id']}@{d.metadata['source_version']}]"
            for d in docs
        )

    chain = retriever | RunnableLambda(cite)
    assert chain.invoke("How much does the Pro plan cost?") == "59 [plans@2]"
    docs = asyncio.run(retriever.ainvoke("How much does the Pro plan cost?"))
    assert [d.metadata["source_id"] for d in docs] == ["plans"]
    # The same conversion without the retriever.
    answer = retriever.client.ask("How much does the Pro plan cost?", min_sequence=retriever.min_sequence)
    assert answer_to_documents(answer) == docs


def test_validate_output_passes_a_supported_claim_and_blocks_unsupported_ones(world):
    client, _ = world
    ok = validate_output(client, "The Pro plan costs €59 per month.")
    assert ok.passed and ok.reasons == [], ok

    contradicted = validate_output(client, AIMessage(content="The Pro plan costs €99 per month."))
    assert contradicted.overall is Verdict.BLOCK, contradicted
    assert [r.code for r in contradicted.reasons] == ["contradicted"], contradicted.reasons

    unknown = validate_output(client, "The Enterprise plan costs €500 per month.")
    assert not unknown.passed, unknown
    assert "unknown_entity" in [r.code for r in unknown.reasons], unknown.reasons


def test_the_firewall_runnable_passes_output_on_or_raises_the_blocked_reasons(world):
    client, _ = world
    firewall = OntoloopFirewall(client=client)
    assert isinstance(firewall, Runnable)
    good = AIMessage(content="The Pro plan costs €59 per month.")
    assert firewall.invoke(good) is good
    assert firewall.invoke("The Pro plan costs €59 per month.") == "The Pro plan costs €59 per month."

    chain = RunnableLambda(lambda question: "The Pro plan costs €99 per month.") | firewall
    with pytest.raises(OutputBlocked) as blocked:
        chain.invoke("How much does the Pro plan cost?")
    assert [r.code for r in blocked.value.reasons] == ["contradicted"], blocked.value
    assert "contradicted" in str(blocked.value) and "€99" in str(blocked.value)
    assert not blocked.value.validation.passed

    report = OntoloopFirewall(client=client, raise_on_block=False)
    validation = report.invoke("The Pro plan costs €99 per month.")
    assert [r.code for r in validation.reasons] == ["contradicted"], validation
    assert report.invoke("The Pro plan costs €59 per month.").passed


def test_the_retriever_with_a_token_cites_the_loaded_world(client):
    [doc] = OntoloopRetriever(client=client).invoke("How much does the Pro plan cost?")
    meta = doc.metadata
    assert (meta["value"], meta["source_id"], meta["source_version"]) == ("49", "pricing", 1), meta
    assert (meta["origin"], meta["authority"], meta["status"]) == ("pricing-page", 3, "ANSWERED")


def test_importing_the_client_does_not_import_langchain():
    code = (
        "import sys, ontoloop_client\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('langchain', 'ontoloop_client.langchain')))\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_adapter_without_langchain_core_says_how_to_install_it():
    # langchain_core made unimportable, as in an environment without the extra.
    code = (
        "import sys\n"
        "sys.modules['langchain_core'] = None\n"
        "try:\n"
        "    import ontoloop_client.langchain\n"
        "except ImportError as error:\n"
        "    print(error)\n"
        "else:\n"
        "    raise SystemExit('imported without langchain_core')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert "pip install 'ontoloop-client[langchain]'" in out.stdout, out


def test_the_documented_agent_snippet_runs(secured, token, capsys):
    docs = Path(__file__).resolve().parents[3] / "docs" / "python-client.md"
    section = docs.read_text().split("## LangChain", 1)[1]
    snippet = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    dial = 'Client("http://127.0.0.1:50051", token)'
    assert dial in snippet and "OntoloopRetriever(" in snippet, snippet
    # The snippet as written, dialling the test's system; its model's answer is supported.
    exec(snippet.replace(dial, "Client(token=token, **secured)"), {"token": token, "secured": secured})
    assert capsys.readouterr().out == "The Pro plan costs €49 per month.\n"
    # A model that gets the price wrong is stopped by the firewall step.
    wrong = snippet.replace(dial, "Client(token=token, **secured)").replace("€49", "€99")
    with pytest.raises(OutputBlocked) as blocked:
        exec(wrong, {"token": token, "secured": secured})
    assert [r.code for r in blocked.value.reasons] == ["contradicted"], blocked.value
