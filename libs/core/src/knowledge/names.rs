//! Entity names: the normalised key under which every spelling of one entity meets.
//!
//! "Pro", "pro plan" and "Pro  Plan" are one key: case and spacing are folded and a trailing
//! entity-type noun from the ontology (`plan`, `team`, ...) is dropped when something remains.

/// Folds names into keys using the ontology's type nouns.
#[derive(Debug, Clone, Default)]
pub struct NameNormaliser {
    type_nouns: Vec<String>,
}

impl NameNormaliser {
    /// A normaliser that strips these trailing type nouns.
    pub fn new(type_nouns: Vec<String>) -> Self {
        Self { type_nouns }
    }

    /// The key of a name; empty when the name has no letters or digits.
    pub fn key(&self, name: &str) -> String {
        let folded: Vec<String> = name
            .split(|c: char| c.is_whitespace())
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '.')
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect();
        let mut words: &[String] = &folded;
        if words.len() > 1 && words[0] == "the" {
            words = &words[1..];
        }
        if words.len() > 1
            && words
                .last()
                .is_some_and(|last| self.type_nouns.iter().any(|n| n == last))
        {
            words = &words[..words.len() - 1];
        }
        words.join(" ")
    }

    /// The type noun a name ends with, if any (`Payments service` gives `service`).
    pub fn type_of(&self, name: &str) -> Option<String> {
        let last = name.split_whitespace().last()?.to_lowercase();
        self.type_nouns.iter().find(|n| **n == last).cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normaliser() -> NameNormaliser {
        NameNormaliser::new(vec![
            "plan".into(),
            "team".into(),
            "service".into(),
            "policy".into(),
        ])
    }

    #[test]
    fn spellings_of_one_entity_share_a_key() {
        let n = normaliser();
        assert_eq!(n.key("Pro"), "pro");
        assert_eq!(n.key("Pro plan"), "pro");
        assert_eq!(n.key("  PRO   Plan "), "pro");
        assert_eq!(n.key("the Atlas team"), "atlas");
        assert_eq!(n.key("Payments service"), "payments");
        assert_eq!(n.key("Tessaly Dock"), "tessaly dock");
    }

    #[test]
    fn a_lone_type_noun_is_kept() {
        let n = normaliser();
        assert_eq!(n.key("Plan"), "plan");
        assert_eq!(n.type_of("Payments service").as_deref(), Some("service"));
        assert_eq!(n.type_of("Tessaly Dock"), None);
    }
}
