use super::*;
use chrono::Utc;
use ontoloop_core::knowledge::encoder::EncodeError;

/// Words hashed into 64 dimensions, normalised: texts sharing words are close.
struct Words;

impl SentenceEncoder for Words {
    fn id(&self) -> &str {
        "words"
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        Ok(texts
            .iter()
            .map(|text| {
                let mut v = vec![0.0f32; 64];
                for word in text.split(|c: char| !c.is_alphanumeric()) {
                    if word.is_empty() {
                        continue;
                    }
                    let lower = word.to_lowercase();
                    let slot = lower.bytes().fold(7usize, |h, b| h * 31 + usize::from(b)) % 64;
                    v[slot] += 1.0;
                }
                let norm = v
                    .iter()
                    .map(|x| x * x)
                    .sum::<f32>()
                    .sqrt()
                    .max(f32::EPSILON);
                v.iter().map(|x| x / norm).collect()
            })
            .collect())
    }
}

fn page(id: &str, body: &str, acl: &[&str]) -> PageVersion {
    PageVersion {
        source_id: id.into(),
        version: 1,
        title: id.into(),
        origin: "wiki".into(),
        body: body.into(),
        updated_at: Utc::now(),
        acl: acl.iter().map(|s| (*s).to_owned()).collect(),
        confidence: 1.0,
        deleted: false,
        effective_from: None,
    }
}

fn nearest(index: &DenseIndex, query: &str, readable: &[&str]) -> Vec<PassageKey> {
    let vector = index.encode(query).expect("encode").expect("a vector");
    index
        .nearest(&vector, 2, |(id, _)| readable.contains(&id.as_str()))
        .into_iter()
        .map(|(key, _)| key)
        .collect()
}

#[test]
fn passages_are_found_by_meaning_filtered_first_and_follow_their_page() {
    let handbook = page(
        "handbook",
        "# Travel\n\nBook trains two weeks ahead.\n\n# Office\n\nThe guest wifi password is on the fridge.",
        &[],
    );
    let vault = page("vault", "The admin wifi password is in the vault.", &["it"]);
    let mut index = DenseIndex::build(Arc::new(Words), [&handbook, &vault]).expect("build");
    assert_eq!(index.len(), 3);
    assert_eq!(
        nearest(&index, "guest wifi password fridge", &["handbook"])[0],
        ("handbook".to_owned(), 1)
    );
    // Filtered before ranking: the vault is never returned to one who may not read it.
    assert!(
        !nearest(&index, "admin wifi password vault", &["handbook"])
            .iter()
            .any(|(id, _)| id == "vault")
    );
    assert_eq!(
        nearest(&index, "admin wifi password vault", &["handbook", "vault"])[0].0,
        "vault"
    );
    let vector = index.encode("guest wifi").expect("encode").expect("vector");
    let similarity = index
        .similarity(&vector, &("handbook".to_owned(), 1))
        .expect("held");
    assert!(similarity > 0.0 && similarity <= 1.0 + 1e-6, "{similarity}");
    // A new version replaces the page's passages; a deletion takes them out.
    let revised = PageVersion {
        version: 2,
        ..page("handbook", "Wifi: ask reception.", &[])
    };
    index.update([(Some(&handbook), &revised)]).expect("update");
    assert_eq!(index.len(), 2);
    assert!(
        index
            .similarity(&vector, &("handbook".to_owned(), 1))
            .is_none()
    );
    let tombstone = PageVersion::tombstone(&revised, Utc::now());
    index
        .update([(Some(&revised), &tombstone)])
        .expect("delete");
    assert_eq!(index.len(), 1);
    assert!(index.encode("  ").expect("encode").is_none());
}

/// [`Words`] that waits until its gate opens.
struct Gated(Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

impl SentenceEncoder for Gated {
    fn id(&self) -> &str {
        "gated"
    }

    fn encode(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EncodeError> {
        let (open, opened) = &*self.0;
        let mut open = open.lock().expect("gate");
        while !*open {
            open = opened.wait(open).expect("gate");
        }
        Words.encode(texts)
    }
}

fn pages(n: usize) -> Arc<BTreeMap<String, PageVersion>> {
    Arc::new(
        (0..n)
            .map(|k| {
                let id = format!("p{k}");
                (id.clone(), page(&id, &format!("Note number {k}."), &[]))
            })
            .collect(),
    )
}

#[test]
fn a_large_tenant_is_embedded_in_the_background_with_what_changed_meanwhile() {
    let gate = Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let lazy = LazyDense::new(Some(Arc::new(Gated(Arc::clone(&gate)))));
    let current = pages(INLINE_DENSE_PASSAGES + 44);
    // The first question starts the build and is answered without vectors.
    assert!(lazy.with(&current, |dense| dense.is_none()));
    assert!(!lazy.is_ready());
    // A page written while the model works is kept and patched in after.
    let late = page("late", "The harbour crane lifts forty tonnes.", &[]);
    lazy.update([&late]);
    let (open, opened) = &*gate;
    *open.lock().expect("gate") = true;
    opened.notify_all();
    let started = std::time::Instant::now();
    while !lazy.is_ready() && started.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(lazy.is_ready());
    let found = lazy.with(&current, |dense| {
        let index = dense.expect("ready");
        assert_eq!(index.len(), INLINE_DENSE_PASSAGES + 45);
        nearest(index, "harbour crane tonnes", &["late"])
    });
    assert_eq!(found, [("late".to_owned(), 0)]);
    assert!(lazy.approx_bytes() > 0);
}

#[test]
fn a_ready_index_is_patched_beside_its_callers_and_drops_what_was_overtaken() {
    let gate = Arc::new((Mutex::new(true), Condvar::new()));
    let lazy = LazyDense::new(Some(Arc::new(Gated(Arc::clone(&gate)))));
    let current = pages(3);
    assert_eq!(lazy.with(&current, |d| d.map(DenseIndex::len)), Some(3));
    // The model is held: the update returns without it (encoding under the caller would
    // never return), and the old version's passage has left at once.
    *gate.0.lock().expect("gate") = false;
    let revised = PageVersion {
        version: 2,
        ..page("p0", "The harbour crane lifts forty tonnes.", &[])
    };
    lazy.update([&revised]);
    // A question waits for a small patch a while, then answers without it.
    let held = lazy.with(&current, |d| {
        let d = d.expect("ready");
        (d.len(), d.outstanding())
    });
    assert_eq!(held, (2, 1));
    // Deleted while it waits or is encoded: its passages never come in.
    lazy.update([&PageVersion::tombstone(&revised, Utc::now())]);
    let late = page("late", "The harbour crane lifts forty tonnes.", &[]);
    lazy.update([&late]);
    *gate.0.lock().expect("gate") = true;
    gate.1.notify_all();
    let found = lazy.with(&current, |d| {
        let d = d.expect("ready");
        assert_eq!((d.len(), d.outstanding()), (3, 0));
        nearest(d, "harbour crane tonnes", &["p0", "late"])
    });
    assert_eq!(found, [("late".to_owned(), 0)]);
}

#[test]
fn pages_arriving_start_the_build_before_any_question() {
    let lazy = LazyDense::new(Some(Arc::new(Words)));
    let current = pages(5);
    lazy.warm(&current);
    let started = std::time::Instant::now();
    while !lazy.is_ready() && started.elapsed() < std::time::Duration::from_secs(60) {
        std::thread::sleep(std::time::Duration::from_millis(10));
        // Both builders may have been busy with other tests' indexes: a later arrival
        // starts it.
        lazy.warm(&current);
    }
    assert!(lazy.is_ready());
    assert_eq!(lazy.with(&current, |d| d.map(DenseIndex::len)), Some(5));
    // Without a model, nothing starts.
    let without = LazyDense::new(None);
    without.warm(&current);
    assert!(!without.is_ready());
}

#[test]
fn a_small_tenant_is_embedded_at_once_and_none_without_a_model_or_above_the_limit() {
    let small = pages(3);
    let lazy = LazyDense::new(Some(Arc::new(Words)));
    assert_eq!(
        lazy.with(&small, |dense| dense.map(DenseIndex::len)),
        Some(3)
    );
    let without = LazyDense::new(None);
    assert!(without.with(&small, |dense| dense.is_none()));
    let many = pages(MAX_DENSE_PASSAGES + 1);
    let huge = LazyDense::new(Some(Arc::new(Words)));
    assert!(huge.with(&many, |dense| dense.is_none()));
    assert!(!huge.is_ready());
    // A tenant that outgrows the cap while it is ready goes to BM25 alone.
    lazy.update(many.values());
    assert!(!lazy.is_ready());
    assert!(lazy.with(&many, |dense| dense.is_none()));
}
