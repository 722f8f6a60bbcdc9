//! Predicates about one thing: a number stated without a name ("Customers can request a refund
//! within 14 days of purchase.") answers a failed question that asks with the statement's words
//! ("How many days do customers have to request a refund?"). Statements that give the same
//! number are one relation said two ways; its subject is the title of a page that states it
//! (or states its number) and shares the most words with it ("Refund policy"), the title's last
//! word the subject's type.

use std::collections::{BTreeMap, BTreeSet};

use super::phrases::{bare, skeleton};
use super::{
    MAX_EXAMPLES, MAX_PATTERNS, Page, PreviewFact, ProposedPredicate, Types, is_number,
    question_words,
};
use crate::knowledge::document;
use crate::knowledge::extract::split_sentences;
use crate::knowledge::semantic::refusal;
use crate::knowledge::words::{STOPWORDS, stem};

/// Sentences longer than this many words are not read.
const MAX_SENTENCE_WORDS: usize = 24;

/// One statement: its value, page and sentence.
struct Stated {
    value: String,
    page: usize,
    sentence: String,
}

/// Fixed-subject predicates some failed question asks for; names already `taken` not reused.
pub(super) fn propose(
    pages: &[Page<'_>],
    failed: &[&str],
    types: &mut Types,
    taken: &BTreeSet<String>,
) -> Vec<ProposedPredicate> {
    let mut groups: BTreeMap<String, Vec<Stated>> = BTreeMap::new();
    for (p, page) in pages.iter().enumerate() {
        let prose = document::parse(page.body).prose();
        for sentence in split_sentences(&prose) {
            let sentence = sentence.trim();
            let tokens: Vec<&str> = sentence.split_whitespace().collect();
            if tokens.len() > MAX_SENTENCE_WORDS || refusal(sentence, false).is_some() {
                continue;
            }
            // No name past the first word: a statement about no one in particular.
            if tokens
                .iter()
                .skip(1)
                .any(|t| bare(t).chars().next().is_some_and(char::is_uppercase))
            {
                continue;
            }
            let numbers: Vec<usize> = (0..tokens.len())
                .filter(|&i| {
                    tokens[i].chars().any(|c| c.is_ascii_digit()) && is_number(bare(tokens[i]))
                })
                .collect();
            let [n] = numbers.as_slice() else { continue };
            groups
                .entry(skeleton(&tokens, &[], Some(*n)))
                .or_default()
                .push(Stated {
                    value: bare(tokens[*n]).to_owned(),
                    page: p,
                    sentence: sentence.to_owned(),
                });
        }
    }
    let keys: Vec<&String> = groups.keys().collect();
    let words_of = |text: &str| -> BTreeSet<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2 && w.chars().all(char::is_alphabetic))
            .map(str::to_lowercase)
            .filter(|w| !STOPWORDS.contains(&w.as_str()))
            .map(|w| stem(&w))
            .collect()
    };
    let mut proposed: Vec<ProposedPredicate> = Vec::new();
    let mut clusters_seen: BTreeSet<Vec<String>> = BTreeSet::new();
    let mut names_used = taken.clone();
    for question in failed {
        let asked: BTreeSet<String> = question_words(question).iter().map(|w| stem(w)).collect();
        if asked.is_empty() {
            continue;
        }
        let need = asked.len().min(2);
        let matching: Vec<(usize, &String)> = keys
            .iter()
            .map(|k| (words_of(k).intersection(&asked).count(), *k))
            .filter(|(n, _)| *n >= need)
            .collect();
        let Some(&(_, best)) = matching
            .iter()
            .max_by_key(|(n, k)| (*n, groups[*k].len(), std::cmp::Reverse(k.len())))
        else {
            continue;
        };
        let values: BTreeSet<&str> = groups[best].iter().map(|s| s.value.as_str()).collect();
        let cluster: Vec<String> = matching
            .iter()
            .filter(|(_, k)| groups[*k].iter().any(|s| values.contains(s.value.as_str())))
            .map(|(_, k)| (*k).clone())
            .collect();
        if !clusters_seen.insert(cluster.clone()) {
            continue;
        }
        let mut words: BTreeSet<String> = cluster.iter().flat_map(|k| words_of(k)).collect();
        words.extend(asked.iter().cloned());
        // The subject: the title sharing most words with the statements, of a page stating
        // them or their number; the shorter on a tie.
        let mut titles: BTreeSet<usize> = cluster
            .iter()
            .flat_map(|k| groups[k].iter().map(|s| s.page))
            .collect();
        for (p, page) in pages.iter().enumerate() {
            if page
                .body
                .split_whitespace()
                .any(|t| values.contains(bare(t)))
            {
                titles.insert(p);
            }
        }
        let Some((score, subject)) = titles
            .iter()
            .map(|&p| {
                let title = pages[p].title.trim();
                let shared = words_of(title).intersection(&words).count();
                (shared, title)
            })
            .max_by_key(|(shared, title)| {
                (*shared, std::cmp::Reverse(title.split_whitespace().count()))
            })
        else {
            continue;
        };
        if score == 0 {
            continue;
        }
        let subject_type = subject
            .split_whitespace()
            .last()
            .map(|w| bare(w).to_lowercase())
            .filter(|w| w.len() > 2 && w.chars().all(char::is_alphabetic))
            .unwrap_or_else(|| "topic".to_owned());
        types.add(&subject_type, "a heading's last word", subject);
        let vocabulary: Vec<String> = cluster
            .iter()
            .flat_map(|k| k.split_whitespace().map(|w| bare(w).to_lowercase()))
            .filter(|w| {
                w.len() > 2
                    && w.chars().all(char::is_alphabetic)
                    && !STOPWORDS.contains(&w.as_str())
            })
            .fold(Vec::new(), |mut acc, w| {
                if !acc.iter().any(|x: &String| stem(x) == stem(&w)) {
                    acc.push(w);
                }
                acc
            });
        let base = vocabulary
            .iter()
            .take(2)
            .cloned()
            .collect::<Vec<_>>()
            .join("_");
        let base = if base.is_empty() {
            "amount".to_owned()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 2;
        while names_used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        names_used.insert(name.clone());
        let stated: Vec<&Stated> = cluster.iter().flat_map(|k| groups[k].iter()).collect();
        proposed.push(ProposedPredicate {
            name,
            from: "statement about one thing".to_owned(),
            subject_type,
            object_type: "number".to_owned(),
            subject: Some(subject.to_owned()),
            vocabulary,
            patterns: cluster
                .iter()
                .take(MAX_PATTERNS)
                .map(|k| k.replace("{N}", "{o:number}"))
                .collect(),
            examples: stated
                .iter()
                .take(MAX_EXAMPLES)
                .map(|s| s.sentence.clone())
                .collect(),
            subjects: 1,
            facts: stated
                .iter()
                .map(|s| PreviewFact {
                    subject: subject.to_owned(),
                    object: s.value.clone(),
                    page: pages[s.page].id.to_owned(),
                })
                .collect(),
            answers: Vec::new(),
        });
    }
    proposed
}
