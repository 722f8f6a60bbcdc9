use super::*;
use chrono::Utc;

#[test]
fn merges_leave_a_large_segment_alone_until_much_of_it_is_replaced() {
    use tantivy::index::{SegmentId, SegmentMeta};
    use tantivy::indexer::MergePolicy;
    let index = Index::create_in_ram(Schema::builder().build());
    let meta = |docs: u32| index.new_segment_meta(SegmentId::generate_random(), docs);
    let merged = |policy: &dyn MergePolicy, segments: &[SegmentMeta]| {
        let mut ids: Vec<String> = policy
            .compute_merge_candidates(segments)
            .into_iter()
            .flat_map(|candidate| candidate.0)
            .map(|id| id.uuid_string())
            .collect();
        ids.sort();
        ids
    };
    let ids = |segments: &[SegmentMeta]| {
        let mut ids: Vec<String> = segments.iter().map(|s| s.id().uuid_string()).collect();
        ids.sort();
        ids
    };
    // An index of 5,000 documents and the segments of eight updates.
    let large = meta(5_000);
    let updates: Vec<SegmentMeta> = (0..8).map(|_| meta(2)).collect();
    let mut segments = vec![large.clone()];
    segments.extend(updates.iter().cloned());
    // tantivy's default merges the large one with them; this policy only the updates.
    let default = tantivy::indexer::LogMergePolicy::default();
    assert_eq!(merged(&default, &segments), ids(&segments));
    assert_eq!(merged(&merge_policy(), &segments), ids(&updates));
    // Alone with two updates it stays, unless more than half of it was replaced.
    let few = [large.clone(), meta(2), meta(2)];
    assert!(merged(&merge_policy(), &few).is_empty());
    let replaced = large.with_delete_meta(2_600, 1);
    assert_eq!(
        merged(&merge_policy(), &[replaced.clone(), meta(2)]),
        ids(&[replaced])
    );
}

fn page(id: &str, body: &str, acl: &[&str]) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version: 1,
        title: id.into(),
        origin: "faq".into(),
        body: body.into(),
        updated_at: Utc::now(),
        acl: acl.iter().map(|s| s.to_string()).collect(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

#[test]
fn ranks_by_bm25_and_never_returns_what_the_caller_may_not_read() {
    let pages = vec![
        page("a", "The Pro plan costs 49 per user per month.", &[]),
        page("b", "Pro pricing secret: the Pro plan costs 59.", &["cfo"]),
        page("c", "Office guide.", &[]),
    ];
    let index = PageIndex::build(&pages).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    let cfo = Caller::new("t", "cfo").expect("caller");
    assert_eq!(
        index.search("How much is the Pro plan?", 3, &alice),
        vec!["a"]
    );
    assert_eq!(index.search("How much is the Pro plan?", 3, &cfo)[0], "b");
    assert!(index.search("", 3, &alice).is_empty());
    assert!(index.search("zebra", 3, &alice).is_empty());
}

/// Stop words and question words are left out of a query: a page holding only those is no
/// answer. A query of nothing else is searched as it is.
#[test]
fn a_query_searches_the_words_that_say_what_it_is_about() {
    let pages = vec![
        page("a", "The Pro plan costs 49 per user per month.", &[]),
        page(
            "b",
            "Who reads this guide? The on-call engineer, who answers.",
            &[],
        ),
    ];
    let index = PageIndex::build(&pages).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    assert_eq!(index.search("Who owns the Pro plan?", 5, &alice), vec!["a"]);
    assert_eq!(index.search("Who is who?", 5, &alice), vec!["b"]);
}

#[test]
fn a_deleted_page_leaves_the_index_and_comes_back_with_its_next_version() {
    let live = page("a", "The Pro plan costs 49 per user per month.", &[]);
    let other = page("b", "Office guide for the Pro team.", &[]);
    let mut index = PageIndex::build([&live, &other]).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    let tombstone = PageVersion::tombstone(&live, Utc::now());
    index.update([(Some(&live), &tombstone)]).expect("delete");
    assert_eq!(index.search("Pro plan costs", 3, &alice), vec!["b"]);
    // The stats lost the page's terms once: a tombstone replaced by a new version does not
    // take them out again.
    let back = PageVersion {
        version: 3,
        ..page("a", "The Pro plan costs 49 per user per month.", &[])
    };
    index.update([(Some(&tombstone), &back)]).expect("restore");
    let fresh = PageIndex::build([&back, &other]).expect("index");
    ranks_as_built_afresh(&index, &fresh, &["Pro plan costs"], 3, &alice);
    assert_eq!(index.search("Pro plan costs", 3, &alice)[0], "a");
}

/// `index`, updated, ranks every query's best `limit` pages for `caller` as `fresh`, the
/// index built afresh from the same pages, does.
fn ranks_as_built_afresh(
    index: &PageIndex,
    fresh: &PageIndex,
    queries: &[&str],
    limit: usize,
    caller: &Caller,
) {
    for query in queries {
        assert_eq!(
            index.search(query, limit, caller),
            fresh.search(query, limit, caller),
            "{query}"
        );
    }
}

/// A staged update is written beside readers: they search the index as it was, with its
/// statistics, until it is published; then it ranks as an index built afresh.
#[test]
fn a_staged_update_is_seen_only_once_published() {
    let old = page("a", "The Pro plan costs 49 per user per month.", &[]);
    let other = page("b", "Office guide for the Pro team.", &[]);
    let mut index = PageIndex::build([&old, &other]).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    let new = PageVersion {
        version: 2,
        ..page("a", "The Enterprise plan is quoted per contract.", &[])
    };
    let before = index.search("Pro plan", 3, &alice);
    let staged = index.stage([(Some(&old), &new)]).expect("stage");
    assert_eq!(index.search("Pro plan", 3, &alice), before);
    assert!(index.search("Enterprise contract", 3, &alice).is_empty());
    index.publish(staged).expect("publish");
    let fresh = PageIndex::build([&new, &other]).expect("index");
    assert_eq!(index.search("Enterprise contract", 3, &alice), vec!["a"]);
    let queries = ["Pro plan", "plan", "Enterprise contract"];
    ranks_as_built_afresh(&index, &fresh, &queries, 3, &alice);
}

#[test]
fn a_large_index_keeps_its_writer_and_ranks_as_one_built_afresh() {
    let words = [
        "plan", "price", "team", "office", "travel", "wifi", "budget", "owner",
    ];
    let body = |n: usize, round: usize| {
        let w = |k: usize| words[(n * 7 + k * 3 + round) % words.len()];
        format!(
            "Page {n} on the {} {} of the {} ({round}).",
            w(0),
            w(1),
            w(2)
        )
    };
    let size = LIVE_WRITER_MIN_DOCS as usize + 200;
    let mut current: Vec<PageVersion> = (0..size)
        .map(|n| page(&format!("p{n:04}"), &body(n, 0), &[]))
        .collect();
    let mut index = PageIndex::build(&current).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    // One page a round, as events come: a new version, every fifth round a deletion.
    for round in 1..=40 {
        let at = (round * 37) % size;
        let next = if round % 5 == 0 {
            PageVersion::tombstone(&current[at], Utc::now())
        } else {
            PageVersion {
                version: current[at].version + 1,
                ..page(&current[at].source_id, &body(at, round), &[])
            }
        };
        index.update([(Some(&current[at]), &next)]).expect("update");
        current[at] = next;
    }
    assert!(
        index.0.live.lock().expect("writer slot").is_some(),
        "a large index keeps its writer"
    );
    let fresh = PageIndex::build(current.iter().filter(|p| !p.deleted)).expect("index");
    let queries = [
        "plan price",
        "team office",
        "wifi budget owner",
        "travel (7)",
        "Page 74",
    ];
    ranks_as_built_afresh(&index, &fresh, &queries, 10, &alice);
}

#[test]
fn a_group_in_an_acl_admits_the_callers_in_it() {
    let pages = vec![page("d", "Gold plan budget: 80.", &["finance"])];
    let index = PageIndex::build(&pages).expect("index");
    let bob = Caller::new("t", "bob").expect("caller");
    assert!(index.search("Gold plan budget", 3, &bob).is_empty());
    let in_finance = bob.with_groups(["finance".to_owned()]);
    assert_eq!(index.search("Gold plan budget", 3, &in_finance), vec!["d"]);
}

#[test]
fn a_filter_keeps_a_search_to_its_origins_and_id_prefix_before_ranking() {
    let mut pages = [
        page("docs/a", "The rollout plan starts in May.", &[]),
        page("docs/b", "The rollout plan rollout slips.", &[]),
        page("wiki/c", "The rollout plan rollout rollout is late.", &[]),
        page("docs/secret", "The rollout plan is secret.", &["board"]),
    ];
    pages[1].origin = "git".into();
    let index = PassageIndex::build(pages.iter()).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    let found = |origins: &[&str], prefix: &str, limit: usize| -> Vec<String> {
        let filter = PageFilter {
            origins: origins.iter().map(|o| o.to_string()).collect(),
            prefix: prefix.to_owned(),
        };
        index
            .search_in("rollout", limit, &alice, &filter)
            .into_iter()
            .map(|hit| hit.source_id)
            .collect()
    };
    assert_eq!(found(&[], "", 10), ["wiki/c", "docs/b", "docs/a"]);
    // Filtered inside the query: the one best hit of the prefix, not the best hit overall
    // dropped afterwards.
    assert_eq!(found(&[], "docs/", 1), ["docs/b"]);
    assert_eq!(found(&["git"], "", 10), ["docs/b"]);
    assert_eq!(found(&["faq", "git"], "docs/", 10), ["docs/b", "docs/a"]);
    assert!(found(&[], "docs/z", 10).is_empty());
    assert!(found(&["nowhere"], "", 10).is_empty());
    // The permission filter still holds inside the others.
    assert!(!found(&[], "docs/s", 10).contains(&"docs/secret".to_owned()));
    assert!(PageFilter::default().is_any());
    assert!(
        PageFilter {
            prefix: "docs/".into(),
            ..PageFilter::default()
        }
        .admits(&pages[0])
    );
    assert!(
        !PageFilter {
            prefix: "docs/".into(),
            ..PageFilter::default()
        }
        .admits(&pages[2])
    );
}

#[test]
fn passages_rank_by_chunk_and_follow_their_page() {
    let handbook = page(
        "handbook",
        "# Travel\n\nBook trains two weeks ahead.\n\n# Office\n\nThe guest wifi password is on the fridge.",
        &[],
    );
    let secret = page("vault", "The admin wifi password is in the vault.", &["it"]);
    let mut index = PassageIndex::build([&handbook, &secret]).expect("index");
    let alice = Caller::new("t", "alice").expect("caller");
    let hits = index.search("guest wifi password", 3, &alice);
    assert_eq!(
        hits.iter()
            .map(|h| (h.source_id.as_str(), h.chunk))
            .collect::<Vec<_>>(),
        [("handbook", 1)],
        "the second chunk of the handbook, never the page alice may not read"
    );
    let it = Caller::new("t", "it").expect("caller");
    assert_eq!(
        index.search("admin wifi password", 3, &it)[0].source_id,
        "vault"
    );
    // The title is part of every passage of its page.
    assert_eq!(index.search("handbook trains", 3, &alice)[0].chunk, 0);
    // A new version replaces every passage of the old one; a fresh build ranks alike.
    let revised = PageVersion {
        version: 2,
        ..page("handbook", "# Office\n\nWifi: ask reception.", &[])
    };
    index.update([(Some(&handbook), &revised)]).expect("update");
    assert!(index.search("trains", 3, &alice).is_empty());
    let fresh = PassageIndex::build([&revised, &secret]).expect("index");
    assert_eq!(
        index.search("wifi reception", 3, &it),
        fresh.search("wifi reception", 3, &it)
    );
    let tombstone = PageVersion::tombstone(&revised, Utc::now());
    index
        .update([(Some(&revised), &tombstone)])
        .expect("delete");
    assert!(index.search("wifi reception", 3, &alice).is_empty());
}
