//! The pattern extractor: sentences of a text to claims, with the ontology's patterns.

use std::sync::Arc;

pub use super::claim::{Claim, ClaimSubject, RULE_SET};
use super::graph::PageVersion;
use super::names::Lexicon;
use super::ontology::{Ontology, Predicate, PredicateKind};
use super::scope::Scope;

/// Sentences longer than this are not matched (a pattern sentence is short; matching a huge
/// run-on "sentence" would cost time quadratic in its length). They count as unrecognised.
pub const MAX_SENTENCE_CHARS: usize = 2_000;

/// Splits text into sentences: a sentence ends at `.`, `!` or `?` followed by white space or
/// the end of the text (so `99.9` does not end one). Sentences are trimmed; empty ones dropped.
pub fn split_sentences(text: &str) -> Vec<&str> {
    let mut sentences = Vec::new();
    // A blank line ends a sentence too: a Markdown heading or a fragment without a full stop
    // never runs on into the paragraph after it ("# Ledger", then "Ledger is owned by ...").
    let (mut start, mut offset) = (0, 0);
    for line in text.split_inclusive('\n') {
        let end = offset + line.len();
        if line.trim().is_empty() {
            sentences_of(&text[start..offset], &mut sentences);
            start = end;
        }
        offset = end;
    }
    sentences_of(&text[start..], &mut sentences);
    sentences
}

/// The sentences of one paragraph: each ends at `.`, `!` or `?` followed by whitespace or the
/// end.
fn sentences_of<'a>(text: &'a str, sentences: &mut Vec<&'a str>) {
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if matches!(c, '.' | '!' | '?') {
            let at_end = chars.peek().is_none_or(|(_, next)| next.is_whitespace());
            if at_end {
                let end = i + c.len_utf8();
                let sentence = text[start..end].trim();
                if !sentence.is_empty() {
                    sentences.push(sentence);
                }
                start = end;
            }
        }
    }
    let tail = text[start..].trim();
    if !tail.is_empty() {
        sentences.push(tail);
    }
}

/// Every claim the ontology's extraction pipeline finds in `text` (see `pipeline`), linking
/// only names the text itself states.
pub fn extract_claims(ontology: &Ontology, text: &str) -> Vec<Claim> {
    ontology
        .extraction()
        .claims(ontology, text, &super::semantic::Lexicon::default())
}

/// The claims of page versions as an answer reads them: [`Extract`] extracts them again at each
/// call; a read model keeps them for the state of the graph it holds, so the pages many
/// questions find are read once.
pub trait PageClaims: Sync {
    /// What [`extract_claims`] finds in the page's body.
    fn stated(&self, ontology: &Ontology, page: &PageVersion) -> Arc<Vec<Claim>>;

    /// What the ontology's pipeline finds in the page's body knowing `known`'s names, each with
    /// the scope it holds in (`Extraction::scoped_claims`).
    fn scoped(
        &self,
        ontology: &Ontology,
        page: &PageVersion,
        known: &Lexicon,
    ) -> Arc<Vec<(Scope, Claim)>>;
}

/// Claims extracted at each call, nothing kept.
pub struct Extract;

impl PageClaims for Extract {
    fn stated(&self, ontology: &Ontology, page: &PageVersion) -> Arc<Vec<Claim>> {
        Arc::new(extract_claims(ontology, &page.body))
    }

    fn scoped(
        &self,
        ontology: &Ontology,
        page: &PageVersion,
        known: &Lexicon,
    ) -> Arc<Vec<(Scope, Claim)>> {
        Arc::new(
            ontology
                .extraction()
                .scoped_claims(ontology, &page.body, known),
        )
    }
}

/// Every claim the ontology's exact patterns find in `text`, in sentence order.
pub fn pattern_claims(ontology: &Ontology, text: &str) -> Vec<Claim> {
    let mut claims = Vec::new();
    for sentence in split_sentences(text) {
        claims.extend(claims_in_sentence(ontology, sentence));
    }
    claims
}

/// The claims one sentence makes (usually none or one).
pub fn claims_in_sentence(ontology: &Ontology, sentence: &str) -> Vec<Claim> {
    let mut claims = Vec::new();
    if sentence.len() > MAX_SENTENCE_CHARS {
        return claims;
    }
    for predicate in ontology.predicates() {
        for pattern in &predicate.patterns {
            let Some(found) = pattern.matches(sentence) else {
                continue;
            };
            if denied_in_slots(predicate, &found) {
                continue;
            }
            let subject = match (&found.subject, &predicate.fixed_subject) {
                (Some(named), _) => ClaimSubject::Named(named.clone()),
                (None, Some(fixed)) => ClaimSubject::Fixed(fixed.clone()),
                (None, None) => continue,
            };
            claims.push(Claim {
                predicate: predicate.name.clone(),
                kind: predicate.kind,
                subject,
                object: found.object,
                sentence: sentence.trim().to_owned(),
                extractor: RULE_SET.to_owned(),
                confidence: 1.0,
            });
            break;
        }
    }
    claims
}

/// Sentence openers that deny or hedge what follows and are never part of a name.
const DENYING_OPENERS: &[&str] = &[
    "if",
    "maybe",
    "perhaps",
    "no",
    "not",
    "never",
    "unless",
    "suppose",
    "assuming",
    "hypothetically",
];

/// Whether the words a template's slots captured deny or hedge what it states: "Kite no longer
/// depends on Relay" fits "{s} depends on {o}" with the subject "Kite no longer". Lower-case
/// words of a subject or of an entity or number object are read (a name such as "Will Price"
/// stays a name; a description may use any word), and an opener such as "Perhaps"; a rename's
/// own past tense is allowed.
fn denied_in_slots(predicate: &Predicate, found: &super::pattern::Match) -> bool {
    let opener = found
        .subject
        .as_deref()
        .and_then(|s| s.split_whitespace().next())
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase()
        });
    if opener.is_some_and(|w| DENYING_OPENERS.contains(&w.as_str())) {
        return true;
    }
    let mut captured = found.subject.clone().unwrap_or_default();
    if predicate.object_type != "text" && predicate.object_type != "any" {
        captured.push(' ');
        captured.push_str(&found.object);
    }
    let lower: Vec<&str> = captured
        .split_whitespace()
        .filter(|w| w.chars().next().is_some_and(|c| !c.is_uppercase()))
        .collect();
    !lower.is_empty()
        && super::semantic::refusal(&lower.join(" "), predicate.kind == PredicateKind::Rename)
            .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::ontology::tests::sample;

    #[test]
    fn sentences_end_only_before_white_space() {
        let text = "The Pro plan comes with a 99.9% uptime SLA. Really?  Yes!Next";
        assert_eq!(
            split_sentences(text),
            vec![
                "The Pro plan comes with a 99.9% uptime SLA.",
                "Really?",
                "Yes!Next"
            ]
        );
    }

    #[test]
    fn a_template_whose_slots_capture_a_denial_states_nothing() {
        let ontology = sample();
        for denied in [
            "Perhaps Payments service is owned by the Atlas team.",
            "Tessaly Dock no longer is included in the Pro plan.",
            "The Pro plan maybe costs €59 per user per month.",
        ] {
            assert!(
                extract_claims(&ontology, denied).is_empty(),
                "{denied}: {:?}",
                extract_claims(&ontology, denied)
            );
        }
        // Names stay names, and a rename's past tense is its own.
        let kept = extract_claims(
            &ontology,
            "Will Ledger is owned by the Atlas team. Tessaly Beacon was formerly called Tessaly Track.",
        );
        assert_eq!(kept.len(), 2, "{kept:?}");
        assert_eq!(kept[0].subject.name(), "Will Ledger");
    }

    #[test]
    fn a_huge_run_on_sentence_is_not_matched() {
        let text = "Tessaly Dock is owned by the ".repeat(10_000);
        assert!(extract_claims(&sample(), &text).is_empty());
    }

    #[test]
    fn extracts_slots_fixed_subjects_and_renames() {
        let text = "Tessaly Beacon was formerly called Tessaly Track. The Pro plan costs €59 per user per month. \
                    Customers can request a refund within 14 days of purchase. We accept cards.";
        let claims = extract_claims(&sample(), text);
        assert_eq!(claims.len(), 3);
        assert_eq!(claims[0].kind, PredicateKind::Rename);
        assert_eq!(
            claims[0].subject,
            ClaimSubject::Named("Tessaly Beacon".into())
        );
        assert_eq!(claims[0].object, "Tessaly Track");
        assert_eq!(
            (
                claims[1].predicate.as_str(),
                claims[1].subject.name(),
                claims[1].object.as_str()
            ),
            ("price", "Pro", "59")
        );
        assert_eq!(
            claims[2].subject,
            ClaimSubject::Fixed("Refund policy".into())
        );
        assert_eq!(claims[2].object, "14");
    }

    #[test]
    fn a_blank_line_ends_a_sentence_so_a_heading_never_runs_into_its_paragraph() {
        let text = "# Ledger\n\nLedger is owned by the Payments team. It runs\nin Dublin.\n\n## Support\n  \nAsk the desk";
        assert_eq!(
            split_sentences(text),
            vec![
                "# Ledger",
                "Ledger is owned by the Payments team.",
                "It runs\nin Dublin.",
                "## Support",
                "Ask the desk"
            ]
        );
        assert_eq!(split_sentences("One. Two!"), vec!["One.", "Two!"]);
        assert!(split_sentences("\n\n").is_empty());
    }
}
