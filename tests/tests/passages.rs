//! Questions no slot answers, on the embedded default: `Ask` answers with the passages that hold
//! the question's key words, each cited by page, version, chunk hash and span; only passages the
//! caller may read are ranked; a new version or a deletion of the page is followed at once (and
//! an answer as of before the deletion still finds the page's passage); a
//! question whose words no passage holds abstains; every citation handed out resolves later to
//! current, moved, revised or gone; and the gap reaches the analyst as a pattern keyed by the
//! relation the question asks.

use std::time::Duration;

use ontoloop_core::knowledge::passage::chunk_page;
use ontoloop_proto::v1;
use ontoloop_tests::{Clients, Sandbox, caller, doc, ontology, wait_until};

const ONTOLOGY: &str = r#"{"predicates":[
  {"name":"owned_by","subject_type":"service","object_type":"team","patterns":["{s} is owned by the {o} team."]}],
  "authority":{"wiki":2,"default":1}}"#;

const HANDBOOK: &str = "# Handbook\n\nLedger is owned by the Payments team.\n\n\
## Remote access\n\nTo reset a VPN token, open the self-service portal and choose Renew.\n\n\
## Travel\n\nBook trains two weeks ahead.";

/// The ontology, the handbook and a payroll page only `cfo` may read; the last sequence number.
async fn seed(c: &Clients) -> u64 {
    c.push_all(
        "acme",
        "ops",
        [
            ontology(ONTOLOGY),
            doc("handbook", "wiki", HANDBOOK, &[], 0.0),
            doc(
                "payroll",
                "wiki",
                "# Payroll\n\nSalaries are paid on the 25th; the payroll calendar is private.",
                &["cfo"],
                0.0,
            ),
        ],
    )
    .await
}

/// `text` asked as of `at`.
async fn ask_as_of(
    c: &Clients,
    principal: &str,
    text: &str,
    after: u64,
    at: chrono::DateTime<chrono::Utc>,
) -> v1::Answer {
    let as_of = Some(ontoloop_proto::convert::timestamp(at));
    ask_with(
        c,
        principal,
        after,
        v1::AskRequest {
            as_of,
            ..question(text)
        },
    )
    .await
}

/// An Ask of `text` with nothing else set.
fn question(text: &str) -> v1::AskRequest {
    v1::AskRequest {
        text: text.into(),
        ..Default::default()
    }
}

/// `request` asked by `principal` once `after` is applied.
async fn ask_with(c: &Clients, principal: &str, after: u64, request: v1::AskRequest) -> v1::Answer {
    c.retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller("acme", principal),
            min_sequence: after,
            ..request
        })
        .await
        .expect("ask")
        .into_inner()
}

async fn ask(c: &Clients, principal: &str, text: &str, after: u64) -> v1::Answer {
    ask_ranked(c, principal, text, after, v1::PassageRanking::Unspecified).await
}

/// What `cited` is now, with the passage's text now; the error code when refused.
async fn resolve(
    c: &Clients,
    principal: &str,
    cited: &v1::Passage,
    after: u64,
) -> Result<(v1::CitationStatus, Option<String>), tonic::Code> {
    let (status, passage) = resolve_to(c, principal, cited, after).await?;
    Ok((status, passage.map(|p| p.text)))
}

/// What `cited` is now, with the whole passage now; the error code when refused.
async fn resolve_to(
    c: &Clients,
    principal: &str,
    cited: &v1::Passage,
    after: u64,
) -> Result<(v1::CitationStatus, Option<v1::Passage>), tonic::Code> {
    let resolution = c
        .retrieval
        .clone()
        .resolve_citation(v1::ResolveCitationRequest {
            caller: caller("acme", principal),
            source_id: cited.source_id.clone(),
            source_version: cited.source_version,
            chunk_hash: cited.chunk_hash.clone(),
            start: cited.start,
            end: cited.end,
            min_sequence: after,
        })
        .await
        .map_err(|status| status.code())?
        .into_inner();
    let status = v1::CitationStatus::try_from(resolution.status).expect("a known status");
    Ok((status, resolution.passage))
}

fn cited(answer: &v1::Answer) -> Vec<(String, u64, String)> {
    answer
        .passages
        .iter()
        .map(|p| (p.source_id.clone(), p.source_version, p.text.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_no_slot_answers_gets_cited_passages_the_caller_may_read() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let last = seed(&c).await;

    // A slot question is answered from the graph as before.
    let slot = ask(&c, "alice", "Who owns Ledger?", last).await;
    assert_eq!(slot.status, v1::AnswerStatus::Answered as i32, "{slot:?}");
    assert_eq!(slot.value, "Payments");
    assert!(slot.passages.is_empty());

    // No relation of the ontology: the passage under "Remote access" answers, cited.
    let question = "How do I reset my VPN token?";
    let answer = ask(&c, "alice", question, last).await;
    assert_eq!(
        answer.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{answer:?}"
    );
    assert!(answer.value.is_empty() && answer.hops.is_empty());
    let [passage] = answer.passages.as_slice() else {
        panic!("one passage holds the words: {answer:?}");
    };
    let chunks = chunk_page("handbook", 1, HANDBOOK);
    let expected = chunks
        .iter()
        .find(|chunk| chunk.text.contains("VPN"))
        .expect("a chunk about the VPN");
    assert_eq!(
        (
            passage.source_id.as_str(),
            passage.source_version,
            passage.text.as_str()
        ),
        ("handbook", 1, expected.text.as_str())
    );
    assert_eq!(passage.headings, ["Handbook", "Remote access"]);
    assert_eq!(passage.chunk_hash, expected.anchor.hash);
    assert_eq!(
        (passage.start, passage.end),
        (expected.anchor.start as u64, expected.anchor.end as u64)
    );
    let spanned: String = HANDBOOK
        .chars()
        .skip(expected.anchor.start)
        .take(expected.anchor.end - expected.anchor.start)
        .collect();
    assert_eq!(spanned, passage.text, "the span cites the page's own text");

    // Words no passage holds: an honest abstention, never a loosely related passage.
    let none = ask(&c, "alice", "Is there a gym discount for interns?", last).await;
    assert_eq!(none.status, v1::AnswerStatus::Abstained as i32, "{none:?}");
    assert!(none.passages.is_empty());

    // The permission filter comes before ranking: only the cfo is offered the payroll page.
    let private = "When are salaries paid?";
    let alice = ask(&c, "alice", private, last).await;
    assert_eq!(
        alice.status,
        v1::AnswerStatus::Abstained as i32,
        "{alice:?}"
    );
    let cfo = ask(&c, "cfo", private, last).await;
    assert_eq!(
        cited(&cfo).first().map(|(id, _, _)| id.as_str()),
        Some("payroll"),
        "{cfo:?}"
    );

    // Every citation handed out resolves: unchanged, it is current.
    let vpn = passage.clone();
    assert_eq!(
        resolve(&c, "alice", &vpn, last).await,
        Ok((v1::CitationStatus::Current, Some(vpn.text.clone())))
    );
    let travel = ask(&c, "alice", "How early should I book trains?", last).await;
    let [travel] = travel.passages.as_slice() else {
        panic!("one passage about trains: {travel:?}");
    };
    // A citation of a page the caller may not read is as unknown as one never handed out.
    let payroll = cfo.passages[0].clone();
    let hidden = resolve(&c, "alice", &payroll, last).await;
    assert_eq!(hidden, Err(tonic::Code::NotFound), "{hidden:?}");
    assert_eq!(
        resolve(&c, "cfo", &payroll, last).await.map(|r| r.0),
        Ok(v1::CitationStatus::Current)
    );

    // A new version is followed: its passage, at its version, the old text gone; the cited
    // passage that changed is revised, the one that only moved up the page is moved.
    let revised = "# Handbook\n\nLedger is owned by the Payments team.\n\n\
## Travel\n\nBook trains two weeks ahead.\n\n\
## Remote access\n\nTo reset a VPN token, open the self-service portal, choose Renew and restart \
the client.";
    let after = c
        .push("acme", "ops", doc("handbook", "wiki", revised, &[], 0.0))
        .await
        .expect("push");
    let now = "To reset a VPN token, open the self-service portal, choose Renew and restart the \
               client.";
    let answer = ask(&c, "alice", question, after).await;
    assert_eq!(cited(&answer), [("handbook".to_owned(), 2, now.to_owned())]);
    assert_eq!(
        resolve(&c, "alice", &vpn, after).await,
        Ok((v1::CitationStatus::Revised, Some(now.to_owned())))
    );
    assert_eq!(
        resolve(&c, "alice", travel, after).await,
        Ok((v1::CitationStatus::Moved, Some(travel.text.clone())))
    );

    // The travel passage leaves the handbook for a page of its own: followed there, moved.
    let own_page = c
        .push_all(
            "acme",
            "ops",
            [
                doc(
                    "travel",
                    "wiki",
                    "# Travel\n\nBook trains two weeks ahead.",
                    &[],
                    0.0,
                ),
                doc(
                    "handbook",
                    "wiki",
                    &revised.replace("## Travel\n\nBook trains two weeks ahead.\n\n", ""),
                    &[],
                    0.0,
                ),
            ],
        )
        .await;
    let (status, now_at) = resolve_to(&c, "alice", travel, own_page)
        .await
        .expect("resolve");
    assert_eq!(status, v1::CitationStatus::Moved);
    let now_at = now_at.expect("the passage now");
    assert_eq!(
        (
            now_at.source_id.as_str(),
            now_at.source_version,
            now_at.text.as_str()
        ),
        ("travel", 1, travel.text.as_str())
    );

    // A deleted page is never cited again.
    let before_deletion = chrono::Utc::now();
    let deleted = c
        .push(
            "acme",
            "ops",
            v1::event::Kind::DocDelete(v1::DocDelete {
                doc_id: "handbook".into(),
            }),
        )
        .await
        .expect("push");
    let gone = ask(&c, "alice", question, deleted).await;
    assert_eq!(gone.status, v1::AnswerStatus::Abstained as i32, "{gone:?}");
    assert_eq!(
        resolve(&c, "alice", &vpn, deleted).await,
        Ok((v1::CitationStatus::Gone, None))
    );
    // As of before the deletion the page is there, and its passage answers as it did then.
    let then = ask_as_of(&c, "alice", question, deleted, before_deletion).await;
    assert_eq!(
        then.status,
        v1::AnswerStatus::AnsweredPassages as i32,
        "{then:?}"
    );
    assert_eq!(then.passages[0].source_id, "handbook", "{then:?}");
    assert!(then.passages[0].text.contains("VPN token"), "{then:?}");
    // The page alice may not read stays hidden as of then too.
    assert!(
        cited(
            &ask_as_of(
                &c,
                "alice",
                "When are salaries paid?",
                deleted,
                before_deletion
            )
            .await
        )
        .iter()
        .all(|(id, _, _)| id != "payroll")
    );
    // The passage that left for its own page outlives the handbook.
    assert_eq!(
        resolve(&c, "alice", travel, deleted).await,
        Ok((v1::CitationStatus::Moved, Some(travel.text.clone())))
    );

    // The gap reaches the analyst: a pattern keyed by the relation the question asks ("reset";
    // VPN, written as a name, is the entity it asks about), counting each time it was asked.
    let seen = wait_until(Duration::from_secs(10), || async {
        c.patterns("acme", "ops").await.iter().any(|p| {
            p.kind == "missing_relationship_type" && p.key == "reset" && p.signal_count >= 2
        })
    })
    .await;
    assert!(
        seen,
        "no pattern about the VPN question: {:?}",
        c.patterns("acme", "ops").await
    );
    sandbox.shutdown().await.expect("clean shutdown");
}

async fn ask_ranked(
    c: &Clients,
    principal: &str,
    text: &str,
    after: u64,
    ranking: v1::PassageRanking,
) -> v1::Answer {
    let passage_ranking = ranking as i32;
    let request = v1::AskRequest {
        passage_ranking,
        ..question(text)
    };
    ask_with(c, principal, after, request).await
}

/// With the sentence-encoder model (`make model`, which `make test` runs), passages are also
/// ranked by meaning and fused with BM25; each carries its similarity to the question; the
/// permission filter holds for the dense ranking as for BM25.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passages_are_ranked_by_meaning_too_and_filtered_before_ranking() {
    let sandbox = Sandbox::embedded(&[]).await;
    let c = sandbox.clients();
    let last = seed(&c).await;
    let vpn = "How do I reset my VPN token?";
    for ranking in [
        v1::PassageRanking::Unspecified,
        v1::PassageRanking::Bm25,
        v1::PassageRanking::Dense,
        v1::PassageRanking::Fused,
    ] {
        let answer = ask_ranked(&c, "alice", vpn, last, ranking).await;
        assert_eq!(
            answer.status,
            v1::AnswerStatus::AnsweredPassages as i32,
            "{ranking:?}: {answer:?}"
        );
        let first = &answer.passages[0];
        assert!(first.text.contains("VPN token"), "{ranking:?}: {answer:?}");
        let similarity = first.similarity.expect("the model is loaded in tests");
        assert!(
            similarity > 0.0 && similarity <= 1.0 + 1e-4,
            "{ranking:?}: {similarity}"
        );
    }
    // Dense alone ranks by similarity, nearest first.
    let dense = ask_ranked(&c, "alice", vpn, last, v1::PassageRanking::Dense).await;
    let scores: Vec<f64> = dense.passages.iter().map(|p| p.score).collect();
    assert!(scores.windows(2).all(|w| w[0] >= w[1]), "{scores:?}");
    // A page the caller may not read is never ranked, by meaning either.
    let salaries = "When are salaries paid?";
    for ranking in [v1::PassageRanking::Dense, v1::PassageRanking::Fused] {
        let alice = ask_ranked(&c, "alice", salaries, last, ranking).await;
        assert!(
            alice.passages.iter().all(|p| p.source_id != "payroll"),
            "{ranking:?}: {alice:?}"
        );
        let cfo = ask_ranked(&c, "cfo", salaries, last, ranking).await;
        assert_eq!(
            cfo.passages.first().map(|p| p.source_id.as_str()),
            Some("payroll"),
            "{ranking:?}: {cfo:?}"
        );
    }
    // A question nothing here is about abstains, whatever the ranking.
    let unrelated = ask_ranked(
        &c,
        "alice",
        "Which volcano erupted last winter?",
        last,
        v1::PassageRanking::Fused,
    )
    .await;
    assert_eq!(
        unrelated.status,
        v1::AnswerStatus::Abstained as i32,
        "{unrelated:?}"
    );
    // A ranking that is not one is refused, naming the field.
    let refused = c
        .retrieval
        .clone()
        .ask(v1::AskRequest {
            caller: caller("acme", "alice"),
            text: vpn.into(),
            passage_ranking: 42,
            ..Default::default()
        })
        .await
        .expect_err("refused");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert!(refused.message().contains("passage_ranking"), "{refused:?}");
}
