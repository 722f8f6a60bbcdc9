//! Product facts extracted from documentation files: the input the product graph is rebuilt from
//! when a docs push names changed files.
//!
//! # Format
//!
//! A file describes one product, service or feature in a front-matter block at its top, between
//! two lines of `---`, one `key: value` per line:
//!
//! ```text
//! ---
//! id: svc-payments
//! is_a: service
//! name: Payments API
//! owned_by: team-payments
//! depends_on: svc-ledger, svc-auth
//! part_of: prod-checkout
//! ---
//! Takes card payments and refunds.
//! ```
//!
//! `id` names the subject; every other key becomes one fact `(id, key, value)`, in order.
//! `depends_on` and `part_of` take comma-separated lists. Without a `description` key, the first
//! paragraph after the block is the description. Keys are not checked here: the product graph
//! rejects unknown predicates with a reason ([`crate::product::FactRejection`]), so one bad line
//! never hides the rest of the file. A file without a front-matter block, or whose block names no
//! `id`, describes nothing and yields no facts.

use crate::product::Fact;

/// Longest description taken from a file's first paragraph, in characters.
const MAX_DESCRIPTION_CHARS: usize = 500;

/// The facts a documentation file states (module docs); empty when it describes no entity.
pub fn facts_from_doc(body: &str) -> Vec<Fact> {
    let mut lines = body.lines();
    if lines.by_ref().map(str::trim).find(|l| !l.is_empty()) != Some("---") {
        return Vec::new();
    }
    let mut pairs: Vec<(String, String)> = Vec::new();
    let mut closed = false;
    for line in lines.by_ref() {
        let line = line.trim();
        if line == "---" {
            closed = true;
            break;
        }
        if let Some((key, value)) = line.split_once(':') {
            let (key, value) = (key.trim().to_ascii_lowercase(), value.trim());
            if !key.is_empty() && !value.is_empty() {
                pairs.push((key, value.to_owned()));
            }
        }
    }
    if !closed {
        return Vec::new();
    }
    let Some(id) = pairs
        .iter()
        .find(|(key, _)| key == "id")
        .map(|(_, value)| value.clone())
    else {
        return Vec::new();
    };
    let mut facts = Vec::new();
    for (key, value) in &pairs {
        match key.as_str() {
            "id" => {}
            "depends_on" | "part_of" => facts.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(|v| Fact::new(&id, key, v)),
            ),
            _ => facts.push(Fact::new(&id, key, value)),
        }
    }
    if !pairs.iter().any(|(key, _)| key == "description") {
        let paragraph: Vec<&str> = lines
            .map(str::trim)
            .skip_while(|l| l.is_empty())
            .take_while(|l| !l.is_empty())
            .collect();
        let text: String = paragraph
            .join(" ")
            .chars()
            .take(MAX_DESCRIPTION_CHARS)
            .collect();
        if !text.is_empty() {
            facts.push(Fact::new(&id, "description", &text));
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::product::ProductGraph;

    #[test]
    fn front_matter_becomes_facts() {
        let body = "\n---\nid: svc-pay\nis_a: service\nName: Payments API\nowned_by: team-pay\n\
                    depends_on: svc-ledger, svc-auth,\npart_of: prod-checkout\n---\n\n\
                    Takes card payments\nand refunds.\n\nMore text.\n";
        let facts = facts_from_doc(body);
        let triples: Vec<(&str, &str, &str)> = facts
            .iter()
            .map(|f| (f.subject.as_str(), f.predicate.as_str(), f.object.as_str()))
            .collect();
        assert_eq!(
            triples,
            vec![
                ("svc-pay", "is_a", "service"),
                ("svc-pay", "name", "Payments API"),
                ("svc-pay", "owned_by", "team-pay"),
                ("svc-pay", "depends_on", "svc-ledger"),
                ("svc-pay", "depends_on", "svc-auth"),
                ("svc-pay", "part_of", "prod-checkout"),
                ("svc-pay", "description", "Takes card payments and refunds."),
            ]
        );
    }

    #[test]
    fn files_without_a_subject_state_nothing() {
        assert!(facts_from_doc("Just prose.\n").is_empty());
        assert!(facts_from_doc("---\nis_a: product\n---\nNo id.").is_empty());
        assert!(
            facts_from_doc("---\nid: x\nis_a: product\n").is_empty(),
            "unclosed"
        );
        assert!(facts_from_doc("").is_empty());
    }

    #[test]
    fn an_explicit_description_wins_and_coverage_follows() {
        let product = facts_from_doc(
            "---\nid: prod-a\nis_a: product\nowned_by: team-a\ndescription: Sells A\n---\nBody.",
        );
        assert_eq!(product.last().map(|f| f.object.as_str()), Some("Sells A"));
        let bare = facts_from_doc("---\nid: prod-b\nis_a: product\n---\n");
        let all: Vec<Fact> = product.into_iter().chain(bare).collect();
        let (graph, rejected) = ProductGraph::build(&all);
        assert!(rejected.is_empty(), "{rejected:?}");
        let coverage = graph.coverage();
        assert_eq!((coverage.products, coverage.covered), (2, 1));
    }
}
