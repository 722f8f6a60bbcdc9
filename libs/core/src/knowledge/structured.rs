//! The structured extractor: front matter, `Key: value` lines and Markdown tables whose keys or
//! headers name a predicate, by its name or its words.
//!
//! A key names a predicate when its words overlap the predicate's vocabulary; what else the key
//! names is the subject ("Owner of Routing engine", "Pricing for Pro"), unless the predicate has a
//! fixed subject. The value is the object: a number, a name or a description, by the predicate's
//! object type.

use std::collections::BTreeSet;

use super::extract::{Claim, ClaimSubject};
use super::names::NameNormaliser;
use super::ontology::{Ontology, Predicate, PredicateKind};
use super::question::{STOPWORDS, stem};
use super::semantic::{Lexicon, Profile, mentions, refusal, tokens, values, without_type_noun};

/// Extractor id.
pub const STRUCTURED_ID: &str = "structured/v1";

/// Keys longer than this are prose, not keys.
const MAX_KEY_WORDS: usize = 7;

/// Front matter keys that name the page's subject.
const SUBJECT_KEYS: &[&str] = &["name", "title", "entity", "subject"];

/// What the structured stage read: its claims, the sentences it claimed, and the text left for
/// the other stages (front matter and tables removed).
pub(crate) struct Structured {
    pub claims: Vec<Claim>,
    pub claimed: BTreeSet<String>,
    pub rest: String,
}

/// Reads front matter, tables and `Key: value` sentences of `text`.
pub(crate) fn read(
    ontology: &Ontology,
    profiles: &[Profile],
    lexicon: &Lexicon,
    normaliser: &NameNormaliser,
    text: &str,
) -> Structured {
    let type_nouns = ontology.type_nouns();
    let ctx = Ctx {
        ontology,
        profiles,
        lexicon,
        normaliser,
        type_stems: type_nouns.iter().map(|n| stem(n)).collect(),
        type_nouns,
        predicate_words: profiles
            .iter()
            .flat_map(|p| p.words.keys().cloned())
            .collect(),
    };
    let mut claims = Vec::new();
    let mut claimed = BTreeSet::new();
    let mut rest = String::with_capacity(text.len());
    let mut lines = text.lines().peekable();
    // Front matter: `---` on the first line, up to the next `---`.
    if text.trim_start().starts_with("---") {
        let mut block = Vec::new();
        let mut closed = false;
        let _ = lines.next();
        for line in lines.by_ref() {
            if line.trim() == "---" {
                closed = true;
                break;
            }
            block.push(line);
        }
        if closed {
            claims.extend(ctx.front_matter(&block));
        } else {
            for line in block {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    let mut table: Vec<&str> = Vec::new();
    for line in lines {
        if line.trim_start().starts_with('|') {
            table.push(line);
            continue;
        }
        if !table.is_empty() {
            claims.extend(ctx.table(&table));
            table.clear();
        }
        rest.push_str(line);
        rest.push('\n');
    }
    if !table.is_empty() {
        claims.extend(ctx.table(&table));
    }
    for sentence in super::extract::split_sentences(&rest) {
        for line in sentence.lines() {
            if let Some((key, value)) = line.split_once(':')
                && let Some(claim) = ctx.key_value(None, key, value, line)
            {
                claims.push(claim);
                claimed.insert(sentence.trim().to_owned());
            }
        }
    }
    Structured {
        claims,
        claimed,
        rest,
    }
}

struct Ctx<'a> {
    ontology: &'a Ontology,
    profiles: &'a [Profile],
    lexicon: &'a Lexicon,
    normaliser: &'a NameNormaliser,
    type_nouns: Vec<String>,
    type_stems: BTreeSet<String>,
    predicate_words: BTreeSet<String>,
}

impl Ctx<'_> {
    fn front_matter(&self, block: &[&str]) -> Vec<Claim> {
        let pairs: Vec<(&str, &str)> = block
            .iter()
            .filter_map(|line| line.split_once(':'))
            .map(|(k, v)| (k.trim(), v.trim().trim_matches(['"', '\''])))
            .collect();
        let type_nouns = &self.type_nouns;
        let subject = pairs.iter().find_map(|(k, v)| {
            let k = k.to_lowercase();
            (SUBJECT_KEYS.contains(&k.as_str()) || type_nouns.contains(&k)).then_some(*v)
        });
        pairs
            .iter()
            .filter_map(|(k, v)| self.key_value(subject, k, v, &format!("{k}: {v}")))
            .collect()
    }

    fn table(&self, lines: &[&str]) -> Vec<Claim> {
        let rows: Vec<Vec<&str>> = lines
            .iter()
            .map(|line| {
                line.trim()
                    .trim_matches('|')
                    .split('|')
                    .map(str::trim)
                    .collect()
            })
            .filter(|cells: &Vec<&str>| {
                !cells
                    .iter()
                    .all(|c| c.chars().all(|ch| matches!(ch, '-' | ':' | ' ')))
            })
            .collect();
        let Some((header, body)) = rows.split_first() else {
            return Vec::new();
        };
        let mut claims = Vec::new();
        for row in body {
            let Some(subject) = row.first().filter(|s| !s.is_empty()) else {
                continue;
            };
            for (column, cell) in header.iter().zip(row.iter()).skip(1) {
                let line = format!("{subject} | {column}: {cell}");
                if let Some(claim) = self.key_value(Some(subject), column, cell, &line) {
                    claims.push(claim);
                }
            }
        }
        claims
    }

    /// One key and value. `subject` is the page's or row's subject, when known from outside.
    fn key_value(
        &self,
        subject: Option<&str>,
        key: &str,
        value: &str,
        line: &str,
    ) -> Option<Claim> {
        let key_tokens = tokens(key);
        let key_words = key_tokens
            .iter()
            .filter(|t| t.text.chars().next().is_some_and(char::is_alphanumeric))
            .count();
        let value = value.trim().trim_end_matches(['.', '!']).trim();
        if key_words == 0 || key_words > MAX_KEY_WORDS || value.is_empty() {
            return None;
        }
        if refusal(line, false).is_some() {
            return None;
        }
        let stems: BTreeSet<String> = key_tokens
            .iter()
            .map(|t| stem(&t.lower))
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .collect();
        let mut best: Option<(f64, Claim)> = None;
        for (predicate, profile) in self.ontology.predicates().iter().zip(self.profiles) {
            if predicate.kind == PredicateKind::Rename {
                continue;
            }
            let score: f64 = profile
                .words
                .iter()
                .filter(|(w, _)| stems.contains(*w) && !self.is_type_noun(w))
                .map(|(_, weight)| weight)
                .sum();
            if score <= 0.0 {
                continue;
            }
            let Some(claim) = self.fill(predicate, profile, subject, key, value, line) else {
                continue;
            };
            if best.as_ref().is_none_or(|(b, _)| score > *b) {
                best = Some((score, claim));
            }
        }
        best.map(|(_, claim)| claim)
    }

    fn is_type_noun(&self, word: &str) -> bool {
        self.type_stems.contains(word)
    }

    fn fill(
        &self,
        predicate: &Predicate,
        profile: &Profile,
        subject: Option<&str>,
        key: &str,
        value: &str,
        line: &str,
    ) -> Option<Claim> {
        let subject = match &predicate.fixed_subject {
            Some(fixed) => ClaimSubject::Fixed(fixed.clone()),
            None => ClaimSubject::Named(match self.subject_in_key(profile, key) {
                Some(named) => named,
                None => subject?.to_owned(),
            }),
        };
        let object = match predicate.object_type.as_str() {
            "number" => values(&tokens(value)).first()?.text.clone(),
            "text" | "any" => value.to_owned(),
            _ => {
                let value_tokens = tokens(value);
                let found = mentions(
                    &value_tokens,
                    self.lexicon,
                    self.normaliser,
                    &self.type_nouns,
                    &self.predicate_words,
                );
                let name = match found.as_slice() {
                    [one] => one.name.clone(),
                    [] if value.split_whitespace().count() <= 4 => value.to_owned(),
                    _ => return None,
                };
                without_type_noun(&name, &predicate.object_type)
            }
        };
        Some(Claim {
            predicate: predicate.name.clone(),
            kind: predicate.kind,
            subject,
            object,
            sentence: line.trim().to_owned(),
            extractor: STRUCTURED_ID.to_owned(),
            confidence: 1.0,
        })
    }

    /// What the key names besides the predicate's words: "Owner of Routing engine" names
    /// "Routing engine".
    fn subject_in_key(&self, profile: &Profile, key: &str) -> Option<String> {
        let key_tokens = tokens(key);
        let found = mentions(
            &key_tokens,
            self.lexicon,
            self.normaliser,
            &self.type_nouns,
            &self.predicate_words,
        );
        if let Some(m) = found
            .iter()
            .find(|m| !profile.words.contains_key(&stem(&m.name.to_lowercase())))
        {
            return Some(m.name.clone());
        }
        let rest: Vec<&str> = key_tokens
            .iter()
            .filter(|t| t.text.chars().next().is_some_and(char::is_alphanumeric))
            .filter(|t| {
                let s = stem(&t.lower);
                !profile.words.contains_key(&s) && !STOPWORDS.contains(&s.as_str())
            })
            .map(|t| t.text)
            .collect();
        (!rest.is_empty() && rest.len() <= 4).then(|| rest.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::ontology::tests::sample;
    use crate::knowledge::semantic::profiles;

    fn claims(text: &str) -> Vec<(String, String, String)> {
        let ontology = sample();
        let normaliser = NameNormaliser::new(ontology.type_nouns());
        read(
            &ontology,
            &profiles(&ontology),
            &Lexicon::default(),
            &normaliser,
            text,
        )
        .claims
        .into_iter()
        .map(|c| (c.predicate, c.subject.name().to_owned(), c.object))
        .collect()
    }

    fn triple(p: &str, s: &str, o: &str) -> (String, String, String) {
        (p.into(), s.into(), o.into())
    }

    #[test]
    fn key_value_sentences_name_predicate_and_subject() {
        assert_eq!(
            claims(
                "Owner of Routing engine: the Atlas team. Pricing for Pro: €49 per user, billed monthly."
            ),
            vec![
                triple("owned_by", "Routing engine", "Atlas"),
                triple("price", "Pro", "49")
            ]
        );
        assert_eq!(
            claims("Refund window: 30 days of purchase."),
            vec![triple("refund_days", "Refund policy", "30")]
        );
        assert_eq!(claims("Objective: halve late deliveries."), Vec::new());
    }

    #[test]
    fn front_matter_and_tables() {
        let text = "---\nname: Tessaly Dock\nowner: Atlas\n---\nSome prose.\n\n| Plan | Price |\n|---|---|\n| Pro | €49 |\n| Starter | €19 |\n";
        assert_eq!(
            claims(text),
            vec![
                triple("owned_by", "Tessaly Dock", "Atlas"),
                triple("price", "Pro", "49"),
                triple("price", "Starter", "19"),
            ]
        );
    }
}
