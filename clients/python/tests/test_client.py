"""The client against a running system (see conftest.py): answers with value, status, hedges and
provenance per hop; validation passing and blocking with reasons; a signal reported; an event
pushed and read back with min_sequence; a value announced for later noted beside the one in
effect; a value that differs by scope answered NEEDS_SCOPE, and in a scope; a question no fact answers gets a cited passage whose
citation resolves; a search gives cited passages; refused tokens and callers as exceptions with the reason; the caller named explicitly when authentication is off."""

import dataclasses
import uuid
from datetime import datetime, timedelta, timezone

import grpc
import pytest

from ontoloop_client import (
    AnswerStatus,
    CitationStatus,
    Claim,
    Client,
    DocUpsert,
    InvalidArgument,
    NotFound,
    OntoloopError,
    PermissionDenied,
    RecordSet,
    Severity,
    SignalType,
    Unauthenticated,
    Unavailable,
    Verdict,
)
from ontoloop_client.pb import telemetry_pb2


def test_ask_answers_with_value_status_and_provenance(client):
    answer = client.ask("How much does the Pro plan cost?")
    assert (answer.value, answer.status) == ("49", AnswerStatus.ANSWERED), answer
    assert answer.answered
    assert answer.hedges == []
    assert answer.predicate_path == ["price"]
    winner = answer.evidence[0]
    assert (winner.source_id, winner.source_version, winner.origin, winner.authority) == (
        "pricing",
        1,
        "pricing-page",
        3,
    )
    assert winner.value == "49"
    assert isinstance(winner.valid_from, datetime) and winner.valid_from.tzinfo is not None
    assert str(winner) == "pricing@1 (pricing-page, authority 3)"
    [hop] = answer.hops
    assert (hop.entity, hop.predicate, hop.value) == (answer.entity, "price", "49")
    assert [str(e) for e in hop.evidence] == ["pricing@1 (pricing-page, authority 3)"]


def test_a_low_authority_answer_is_hedged(client):
    answer = client.ask("How much does the Starter plan cost?")
    assert answer.value == "9", answer
    assert answer.status is AnswerStatus.ANSWERED_POSSIBLY_STALE
    codes = [h.code for h in answer.hedges]
    assert "low_authority_only" in codes, answer.hedges
    assert all(h.message for h in answer.hedges)
    assert answer.evidence[0].origin == "forum"


def test_a_multi_hop_answer_carries_provenance_per_hop(client):
    answer = client.ask("Which team maintains the service Kite depends on?")
    assert (answer.value, answer.status) == ("Payments", AnswerStatus.ANSWERED), answer
    assert answer.predicate_path == ["depends_on", "maintained_by"]
    assert [(h.predicate, h.value) for h in answer.hops] == [
        ("depends_on", "Ledger"),
        ("maintained_by", "Payments"),
    ]
    assert answer.hops[0].entity == answer.entity
    for hop in answer.hops:
        assert [str(e) for e in hop.evidence] == ["architecture@1 (wiki, authority 2)"], hop


def test_an_unknown_entity_is_an_honest_abstention(client):
    answer = client.ask("How much does the Platinum plan cost?")
    assert answer.status is AnswerStatus.ABSTAINED, answer
    assert answer.value == "" and not answer.answered
    assert "no known entity" in answer.abstain_reason, answer
    assert answer.hops == [] and answer.evidence == []


def test_a_question_no_fact_answers_gets_cited_passages(client):
    answer = client.ask("Where is the guest wifi password?")
    assert answer.status is AnswerStatus.ANSWERED_PASSAGES, answer
    assert answer.value == "" and not answer.answered
    [passage] = answer.passages
    assert (passage.source_id, passage.source_version, passage.headings) == ("office", 1, ["Guests"])
    assert passage.text == "The guest wifi password is on the fridge."
    assert len(passage.chunk_hash) == 16 and passage.start < passage.end
    cited = client.resolve_citation(passage)
    assert cited.status is CitationStatus.CURRENT, cited
    assert cited.passage is not None and cited.passage.text == passage.text
    forged = dataclasses.replace(passage, chunk_hash="0" * 16)
    with pytest.raises(NotFound):
        client.resolve_citation(forged)


def test_search_gives_cited_passages_with_the_entities_they_name(client):
    found = client.search("guest wifi password", k=3)
    assert found.ranking in ("BM25", "FUSED"), found
    assert found.hits, found
    first = found.hits[0].passage
    assert (first.source_id, first.text) == ("office", "The guest wifi password is on the fridge.")
    assert client.resolve_citation(first).status is CitationStatus.CURRENT
    assert client.search("guest wifi password", prefix="nowhere/").hits == []
    with pytest.raises(InvalidArgument, match="k"):
        client.search("guest wifi password", k=101)
    with pytest.raises(ValueError):
        client.search("guest wifi password", ranking="sideways")


def test_waiting_on_a_sequence_that_never_existed_is_not_found(client):
    with pytest.raises(NotFound) as refused:
        client.ask("How much does the Pro plan cost?", min_sequence=10**9)
    assert refused.value.code == grpc.StatusCode.NOT_FOUND
    assert str(10**9) in refused.value.reason, refused.value


def test_validate_passes_a_supported_claim_and_blocks_a_contradicted_one(client):
    ok = client.validate("The Pro plan costs €49 per month.")
    assert ok.passed and ok.overall is Verdict.PASS, ok
    assert ok.coverage.sentences == 1 and ok.coverage.checkable == 1
    assert ok.reasons == []

    blocked = client.validate("The Pro plan costs €99 per month.")
    assert not blocked.passed and blocked.overall is Verdict.BLOCK, blocked
    [verdict] = blocked.verdicts
    assert verdict.verdict is Verdict.BLOCK
    assert verdict.claim == Claim("Pro", "price", "99")
    assert verdict.sentence == "The Pro plan costs €99 per month."
    assert [r.code for r in verdict.reasons] == ["contradicted"], verdict.reasons
    assert "49" in verdict.reasons[0].message and "pricing@1" in verdict.reasons[0].message

    assert client.validate(claims=[Claim("Pro plan", "price", "49")]).passed
    both = client.validate(claims=[Claim("Pro plan", "price", "49"), Claim("Pro plan", "price", "99")])
    assert both.overall is Verdict.BLOCK
    assert [[r.code for r in v.reasons] for v in both.verdicts] == [
        ["temporal_inconsistency"],
        ["contradicted", "temporal_inconsistency"],
    ], both.verdicts


def test_validate_needs_text_or_claims():
    with pytest.raises(ValueError):
        Client("http://127.0.0.1:1").validate()


def test_report_a_signal_and_its_retry_is_a_duplicate(client):
    key = f"py-{uuid.uuid4().hex}"
    ack = client.report_signal(
        SignalType.ENTITY_MISSING,
        "How much does the Platinum plan cost?",
        entity="Platinum plan",
        agent_id="py-agent-1",
        idempotency_key=key,
    )
    assert not ack.duplicate
    assert ack.severity is Severity.LOW, ack
    again = client.report_signal(
        SignalType.ENTITY_MISSING,
        "How much does the Platinum plan cost?",
        entity="Platinum plan",
        agent_id="py-agent-1",
        idempotency_key=key,
    )
    assert again.duplicate, again


def test_an_invalid_signal_names_the_field(client):
    with pytest.raises(InvalidArgument) as refused:
        client.report_signal(SignalType.ENTITY_MISSING, "?", agent_id="py-agent-1")
    assert refused.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert refused.value.reason == "entity|relationship|sector is required", refused.value


def test_push_an_event_and_read_it_back_with_min_sequence(client):
    ack = client.push_event(
        DocUpsert("team-pricing", "The Team plan costs €19 per month.", origin="pricing-page")
    )
    assert ack.sequence > 0 and not ack.duplicate, ack
    answer = client.ask("How much does the Team plan cost?", min_sequence=ack.sequence)
    assert answer.applied_sequence >= ack.sequence
    assert (answer.value, answer.status) == ("19", AnswerStatus.ANSWERED), answer
    assert answer.evidence[0].source_id == "team-pricing"

    # A new version of the same page, read right after; lookup takes the same min_sequence.
    key = f"py-{uuid.uuid4().hex}"
    update = telemetry_pb2.DocUpsert(
        doc_id="team-pricing",
        title="Team pricing",
        origin="pricing-page",
        body="The Team plan costs €21 per month.",
    )
    second = client.push_event(update, idempotency_key=key)
    assert second.sequence > ack.sequence
    retry = client.push_event(update, idempotency_key=key)
    assert (retry.sequence, retry.duplicate) == (second.sequence, True)
    answer = client.lookup("Team plan", ["price"], min_sequence=second.sequence)
    assert answer.value == "21", answer
    assert answer.evidence[0].source_version == 2


def test_a_value_announced_for_later_is_noted_beside_the_value_in_effect(client):
    now = datetime.now(timezone.utc)
    client.push_event(RecordSet("record:billing", "Scale plan", "price", "79"))
    later = now + timedelta(days=30)
    ack = client.push_event(
        RecordSet("record:billing", "Scale plan", "price", "89", effective_from=later)
    )
    answer = client.lookup("Scale plan", ["price"], min_sequence=ack.sequence)
    assert answer.value == "79", answer
    [upcoming] = answer.upcoming
    assert upcoming.value == "89", answer
    assert abs((upcoming.valid_from - later).total_seconds()) < 1, upcoming
    # Asked as of a day after it takes effect, the announced value is the one in effect.
    after = client.lookup("Scale plan", ["price"], as_of=later + timedelta(days=1))
    assert (after.value, after.upcoming) == ("89", []), after


def test_a_value_that_differs_by_scope_needs_a_scope(client):
    client.push_event(RecordSet("record:billing", "Metro plan", "price", "30"))
    ack = client.push_event(
        RecordSet("record:billing", "Metro plan", "price", "25", scope="region=EU")
    )
    answer = client.lookup("Metro plan", ["price"], min_sequence=ack.sequence)
    assert answer.status is AnswerStatus.NEEDS_SCOPE, answer
    assert [(v.scope, v.value) for v in answer.scoped] == [("", "30"), ("region=EU", "25")]
    assert answer.scoped[1].evidence[0].source_id == "record:billing"
    eu = client.lookup("Metro plan", ["price"], scope="region=EU")
    # One value (hedged: this ontology gives the record origin the lowest authority).
    assert (eu.value, eu.scoped) == ("25", []), eu
    assert eu.status is not AnswerStatus.NEEDS_SCOPE
    with pytest.raises(InvalidArgument) as refused:
        client.lookup("Metro plan", ["price"], scope="region")
    assert "scope" in str(refused.value), refused.value


def test_a_bad_token_is_unauthenticated_with_the_reason(secured, forged_token):
    with Client(token=forged_token, **secured) as forged:
        with pytest.raises(Unauthenticated) as refused:
            forged.ask("How much does the Pro plan cost?")
    error = refused.value
    assert isinstance(error, OntoloopError)
    assert error.code == grpc.StatusCode.UNAUTHENTICATED
    assert error.rpc == "Ask"
    assert "signature" in error.reason, error
    assert "UNAUTHENTICATED" in str(error) and error.reason in str(error)

    with Client(token="not-a-jwt", **secured) as garbage:
        with pytest.raises(Unauthenticated) as refused:
            garbage.validate("The Pro plan costs €49 per month.")
    assert "malformed" in refused.value.reason, refused.value

    with Client(**secured) as anonymous:
        with pytest.raises(Unauthenticated) as refused:
            anonymous.push_event(DocUpsert("x", "The X plan costs €1 per month.", origin="wiki"))
    assert "bearer" in refused.value.reason, refused.value


def test_a_caller_that_is_not_the_tokens_is_refused(secured, token, tenant, principal):
    with Client(token=token, tenant=tenant, principal=principal, **secured) as same:
        assert same.ask("How much does the Pro plan cost?").value == "49"
    with Client(token=token, tenant="someone-else", **secured) as other:
        with pytest.raises(PermissionDenied) as refused:
            other.ask("How much does the Pro plan cost?")
    assert refused.value.reason, refused.value


def test_with_auth_off_the_caller_is_named_explicitly_over_mtls(open_system, open_tls, tenant):
    assert open_system["url"].startswith("https://")
    with Client(tenant=tenant, principal="py-open", **open_system, **open_tls) as c:
        answer = c.ask("How much does the Pro plan cost?")
        assert (answer.value, answer.status) == ("49", AnswerStatus.ANSWERED), answer
        assert c.validate("The Pro plan costs €49 per month.").passed
        ack = c.push_event(
            DocUpsert("open-pricing", "The Solo plan costs €5 per month.", origin="pricing-page")
        )
        assert c.ask("How much does the Solo plan cost?", min_sequence=ack.sequence).value == "5"
    with Client(**open_system, **open_tls) as nobody:
        with pytest.raises(InvalidArgument) as refused:
            nobody.ask("How much does the Pro plan cost?")
    assert "caller" in refused.value.reason, refused.value


def test_tls_needs_the_ca_and_mtls_the_client_certificate(open_system, open_tls, tenant):
    # The system's roots do not know the test's CA; without the client certificate the
    # handshake is refused. Neither call reaches the service.
    without_ca = {k: v for k, v in open_tls.items() if k != "ca_file"}
    without_cert = {"ca_file": open_tls["ca_file"]}
    for tls in (without_ca, without_cert):
        with Client(tenant=tenant, principal="py-open", timeout=5, **open_system, **tls) as c:
            with pytest.raises(Unavailable) as refused:
                c.ask("How much does the Pro plan cost?")
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE, refused.value
    with pytest.raises(ValueError):
        Client(open_system["url"], client_cert_file=open_tls["client_cert_file"])


def test_the_other_services_follow_the_default_port_layout():
    from ontoloop_client.client import _Address

    retrieval = _Address.parse("https://ontoloop.example:6001", "retrieval")
    assert [retrieval.sibling(s).target for s in ("firewall", "telemetry", "analyst")] == [
        "ontoloop.example:6002",
        "ontoloop.example:6003",
        "ontoloop.example:6004",
    ]
    assert retrieval.sibling("analyst").tls
    assert _Address.parse("http://[::1]", "retrieval").target == "[::1]:50051"
    with pytest.raises(ValueError):
        _Address.parse("127.0.0.1:50051", "retrieval")
