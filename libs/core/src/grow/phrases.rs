//! Predicates from recurring statements in prose: a sentence that relates a name to a number
//! ("Starter has a 99.5% uptime SLA.") or two names ("The Atlas team owns Tessaly Route.") is
//! cut into a skeleton with the names and the number as slots; a skeleton seen with several
//! subjects is a relation, and skeletons that state the same fact ("The Pro plan costs €49 …",
//! "You pay €49 per user each month for the Pro plan") are one relation said two ways. Names are
//! capitalised words (past a sentence's start, or seen so elsewhere); a lower-case noun that
//! follows several names is their type (`plan`, `team`). Sentences that assert nothing current
//! (negations, proposals, hypotheticals, past states) are not read.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    MAX_EXAMPLES, MAX_PATTERNS, MAX_PREVIEW_FACTS, Options, Page, PreviewFact, ProposedPredicate,
    Types, is_number,
};
use crate::knowledge::document;
use crate::knowledge::extract::split_sentences;
use crate::knowledge::semantic::refusal;
use crate::knowledge::words::{STOPWORDS, stem};

/// Sentences longer than this many words are not cut into skeletons.
const MAX_SENTENCE_WORDS: usize = 24;

/// A name in a sentence: tokens `start..end`, then its type noun, if one follows.
#[derive(Debug, Clone)]
struct Mention {
    start: usize,
    end: usize,
    name: String,
    noun: Option<String>,
}

/// One sentence cut: the skeleton (`{A} has a {N}% uptime SLA.`), the first slot's name and the
/// second's (a name, or the number).
#[derive(Debug, Clone)]
struct Cut {
    /// The skeleton without the type nouns after its slots, which groups cuts.
    key: String,
    skeleton: String,
    a: String,
    a_noun: Option<String>,
    b: String,
    b_noun: Option<String>,
    number: bool,
    /// The second slot is a description (`{A} is our {T}.`).
    text: bool,
    sentence: String,
    page: String,
}

/// Predicates from the recurring statements of `pages`; names already `taken` are not reused.
pub(super) fn propose(
    pages: &[Page<'_>],
    failed: &[&str],
    options: &Options,
    types: &mut Types,
    taken: &BTreeSet<String>,
) -> Vec<ProposedPredicate> {
    let sentences: Vec<(String, &str)> = pages
        .iter()
        .flat_map(|page| {
            let prose = document::parse(page.body).prose();
            split_sentences(&prose)
                .into_iter()
                .map(|s| (s.trim().to_owned(), page.id))
                .collect::<Vec<_>>()
        })
        .filter(|(s, _)| refusal(s, false).is_none())
        .collect();
    let names = named_words(sentences.iter().map(|(s, _)| s.as_str()));
    let type_nouns = type_nouns(sentences.iter().map(|(s, _)| s.as_str()), &names);
    let mut groups: BTreeMap<String, Vec<Cut>> = BTreeMap::new();
    for (sentence, page) in &sentences {
        for cut in cuts(sentence, page, &names, &type_nouns) {
            groups.entry(cut.key.clone()).or_default().push(cut);
        }
    }
    let groups: Vec<Vec<Cut>> = groups.into_values().collect();
    let asked: Vec<String> = failed.iter().map(|q| q.to_lowercase()).collect();
    let mut proposed = Vec::new();
    let mut names_used = taken.clone();
    for cluster in clusters(&groups) {
        if let Some(p) = predicate(
            &groups,
            &cluster,
            &asked,
            options,
            types,
            &type_nouns,
            &mut names_used,
        ) {
            proposed.push(p);
        }
    }
    proposed
}

/// Words written capitalised past a sentence's start somewhere in the corpus, lower-cased.
fn named_words<'a>(sentences: impl Iterator<Item = &'a str>) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for sentence in sentences {
        for token in sentence.split_whitespace().skip(1) {
            let word = bare(token);
            if capitalised(word) && !STOPWORDS.contains(&word.to_lowercase().as_str()) {
                named.insert(word.to_lowercase());
            }
        }
    }
    named
}

/// Lower-case nouns that follow at least two distinct names: `plan` after Starter and Pro.
fn type_nouns<'a>(
    sentences: impl Iterator<Item = &'a str>,
    names: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut after: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for sentence in sentences {
        let tokens: Vec<&str> = sentence.split_whitespace().collect();
        for m in mentions(&tokens, names, &BTreeSet::new()) {
            if let Some(next) = tokens.get(m.end)
                && !ends_clause(tokens[m.end - 1])
            {
                let word = bare(next).to_lowercase();
                if word.len() >= 3
                    && word.chars().all(|c| c.is_ascii_lowercase())
                    && !STOPWORDS.contains(&word.as_str())
                    && !word.ends_with('s')
                {
                    after.entry(word).or_default().insert(m.name.clone());
                }
            }
        }
    }
    after
        .into_iter()
        .filter(|(_, names)| names.len() >= 2)
        .map(|(noun, _)| noun)
        .collect()
}

pub(super) fn bare(token: &str) -> &str {
    token.trim_matches(|c: char| !c.is_alphanumeric())
}

fn capitalised(word: &str) -> bool {
    word.chars().next().is_some_and(char::is_uppercase)
}

fn ends_clause(token: &str) -> bool {
    token.ends_with([',', ';', ':', '.', '!', '?', ')'])
}

/// The names of a sentence: runs of capitalised words (a sentence's first word only when it is
/// written so elsewhere too), each with the type noun after it.
fn mentions(
    tokens: &[&str],
    names: &BTreeSet<String>,
    type_nouns: &BTreeSet<String>,
) -> Vec<Mention> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let word = bare(tokens[i]);
        let lower = word.to_lowercase();
        let starts = capitalised(word)
            && !STOPWORDS.contains(&lower.as_str())
            && !word.chars().any(|c| c.is_ascii_digit())
            && (i > 0 || names.contains(&lower));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i + 1 < tokens.len()
            && !ends_clause(tokens[i])
            && capitalised(bare(tokens[i + 1]))
            && !tokens[i + 1].chars().any(|c| c.is_ascii_digit())
        {
            i += 1;
        }
        let end = i + 1;
        let name = tokens[start..end]
            .iter()
            .map(|t| bare(t))
            .collect::<Vec<_>>()
            .join(" ");
        let noun = tokens
            .get(end)
            .filter(|_| !ends_clause(tokens[end - 1]))
            .map(|t| bare(t).to_lowercase())
            .filter(|w| type_nouns.contains(w));
        found.push(Mention {
            start,
            end,
            name,
            noun,
        });
        i = end;
    }
    found
}

/// The skeletons of one sentence: a name and its one number, or its two names.
fn cuts(
    sentence: &str,
    page: &str,
    names: &BTreeSet<String>,
    type_nouns: &BTreeSet<String>,
) -> Vec<Cut> {
    let tokens: Vec<&str> = sentence.split_whitespace().collect();
    if tokens.len() > MAX_SENTENCE_WORDS {
        return Vec::new();
    }
    let found = mentions(&tokens, names, type_nouns);
    let numbers: Vec<usize> = (0..tokens.len())
        .filter(|&i| {
            found.iter().all(|m| i < m.start || i >= m.end)
                && tokens[i].chars().any(|c| c.is_ascii_digit())
                && is_number(bare(tokens[i]))
        })
        .collect();
    let mut out = Vec::new();
    let with_noun = |m: &Mention| m.end + usize::from(m.noun.is_some());
    match (found.as_slice(), numbers.as_slice()) {
        (mentions, [n]) if !mentions.is_empty() => {
            for m in mentions {
                out.push(Cut {
                    key: skeleton(&tokens, &[(m.start, with_noun(m), "{A}")], Some(*n)),
                    skeleton: skeleton(&tokens, &[(m.start, m.end, "{A}")], Some(*n)),
                    a: m.name.clone(),
                    a_noun: m.noun.clone(),
                    b: bare(tokens[*n]).to_owned(),
                    b_noun: None,
                    number: true,
                    text: false,
                    sentence: sentence.to_owned(),
                    page: page.to_owned(),
                });
            }
        }
        ([x, y], []) => out.push(Cut {
            key: skeleton(
                &tokens,
                &[
                    (x.start, with_noun(x), "{A}"),
                    (y.start, with_noun(y), "{B}"),
                ],
                None,
            ),
            skeleton: skeleton(
                &tokens,
                &[(x.start, x.end, "{A}"), (y.start, y.end, "{B}")],
                None,
            ),
            a: x.name.clone(),
            a_noun: x.noun.clone(),
            b: y.name.clone(),
            b_noun: y.noun.clone(),
            number: false,
            text: false,
            sentence: sentence.to_owned(),
            page: page.to_owned(),
        }),
        ([m], []) => out.extend(description(&tokens, m, sentence, page)),
        _ => {}
    }
    out
}

/// Words that open a description of the name before them ("Quill is our note app.", "Meet
/// Quill, our note app."): an organisation describing its own things. "is a" is not one: it
/// says what anything is ("The office is a ten minute walk"), too common to be a relation.
const DESCRIBING: &[&str] = &["our"];

/// Words a description has, at most.
const MAX_DESCRIPTION_WORDS: usize = 6;

/// A sentence that describes its one name: the name, then within two words a determiner, then
/// lower-case words to the sentence's end.
fn description(tokens: &[&str], m: &Mention, sentence: &str, page: &str) -> Option<Cut> {
    let after = m.end;
    let det = (after..tokens.len().min(after + 2))
        .find(|&i| DESCRIBING.contains(&bare(tokens[i]).to_lowercase().as_str()))?;
    if det > after
        && !matches!(
            bare(tokens[after]).to_lowercase().as_str(),
            "is" | "remains"
        )
    {
        return None;
    }
    if det == after && !tokens[after - 1].ends_with(',') {
        return None;
    }
    let rest = &tokens[det + 1..];
    let last = rest.last()?;
    if rest.len() > MAX_DESCRIPTION_WORDS
        || !last.ends_with('.')
        || rest
            .iter()
            .any(|t| bare(t).chars().next().is_none_or(|c| !c.is_lowercase()))
    {
        return None;
    }
    let text = rest.iter().map(|t| bare(t)).collect::<Vec<_>>().join(" ");
    let mut head: Vec<String> = tokens[..det + 1].iter().map(|t| (*t).to_owned()).collect();
    head[m.start..m.end].iter_mut().for_each(String::clear);
    head[m.start] = format!("{{A}}{}", if det == after { "," } else { "" });
    let head: Vec<String> = head.into_iter().filter(|t| !t.is_empty()).collect();
    let skeleton = format!("{} {{T}}.", head.join(" "));
    Some(Cut {
        key: skeleton.clone(),
        skeleton,
        a: m.name.clone(),
        a_noun: m.noun.clone(),
        b: text,
        b_noun: None,
        number: false,
        text: true,
        sentence: sentence.to_owned(),
        page: page.to_owned(),
    })
}

/// `tokens` with each span's words replaced by its slot (trailing punctuation kept), and the
/// number at `number` by `{N}` (a currency sign before it and a unit sign after it kept).
pub(super) fn skeleton(
    tokens: &[&str],
    spans: &[(usize, usize, &str)],
    number: Option<usize>,
) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if let Some((_, end, slot)) = spans.iter().find(|(s, _, _)| *s == i) {
            let last = tokens[end - 1];
            let tail = &last[last.trim_end_matches(|c: char| !c.is_alphanumeric()).len()..];
            let head_len = tokens[i].len()
                - tokens[i]
                    .trim_start_matches(|c: char| !c.is_alphanumeric())
                    .len();
            out.push(format!("{}{slot}{tail}", &tokens[i][..head_len]));
            i = *end;
            continue;
        }
        if Some(i) == number {
            let t = tokens[i];
            let first = t.find(|c: char| c.is_ascii_digit()).unwrap_or(0);
            let last = t
                .rfind(|c: char| c.is_ascii_digit())
                .map_or(t.len(), |at| at + 1);
            out.push(format!("{}{{N}}{}", &t[..first], &t[last..]));
        } else {
            out.push(tokens[i].to_owned());
        }
        i += 1;
    }
    out.join(" ")
}

/// Groups (skeletons) joined when they state a fact in common: the same name and number, or the
/// same two names (in either order). Each cluster lists its groups, with whether the group's
/// slots are the other way round from the cluster's first group.
fn clusters(groups: &[Vec<Cut>]) -> Vec<Vec<(usize, bool)>> {
    let mut parent: Vec<usize> = (0..groups.len()).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    let mut by_fact: BTreeMap<(bool, String, String), usize> = BTreeMap::new();
    for (g, cuts) in groups.iter().enumerate() {
        for cut in cuts {
            let (x, y) = (cut.a.to_lowercase(), cut.b.to_lowercase());
            let one_way = cut.number || cut.text;
            let key = if one_way || x <= y {
                (one_way, x, y)
            } else {
                (one_way, y, x)
            };
            match by_fact.get(&key) {
                Some(&other) => {
                    let (a, b) = (root(&mut parent, g), root(&mut parent, other));
                    parent[a] = b;
                }
                None => {
                    by_fact.insert(key, g);
                }
            }
        }
    }
    let mut members: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for g in 0..groups.len() {
        let r = root(&mut parent, g);
        members.entry(r).or_default().push(g);
    }
    members
        .into_values()
        .map(|gs| {
            let first = &groups[gs[0]];
            let pairs: BTreeSet<(String, String)> = first
                .iter()
                .map(|c| (c.a.to_lowercase(), c.b.to_lowercase()))
                .collect();
            let mut out = Vec::new();
            for g in gs {
                let flipped = !groups[g][0].number
                    && !groups[g][0].text
                    && groups[g]
                        .iter()
                        .any(|c| pairs.contains(&(c.b.to_lowercase(), c.a.to_lowercase())))
                    && !groups[g]
                        .iter()
                        .any(|c| pairs.contains(&(c.a.to_lowercase(), c.b.to_lowercase())));
                out.push((g, flipped));
            }
            out
        })
        .collect()
}

/// The noun a question asks for: `plan` of "which plan is …".
fn wh_noun(q: &str) -> Option<String> {
    let words: Vec<&str> = q.split_whitespace().collect();
    words.windows(2).find_map(|pair| {
        matches!(pair[0], "which" | "what")
            .then(|| bare(pair[1]).trim_end_matches('s').to_owned())
            .filter(|w| !w.is_empty())
    })
}

/// The noun most names of a side of the cluster carry (in the first group's orientation).
fn side_noun(groups: &[Vec<Cut>], cluster: &[(usize, bool)], first: bool) -> Option<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for n in side_nouns(groups, cluster, first).flatten() {
        *counts.entry(n.clone()).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(_, c)| *c).map(|(n, _)| n)
}

/// The noun (if any) after the name on one side of every cut of the cluster, in the first
/// group's orientation: `first` is that group's first slot.
fn side_nouns<'a>(
    groups: &'a [Vec<Cut>],
    cluster: &'a [(usize, bool)],
    first: bool,
) -> impl Iterator<Item = &'a Option<String>> + 'a {
    cluster.iter().flat_map(move |&(g, flipped)| {
        groups[g].iter().map(move |cut| {
            if first != flipped {
                &cut.a_noun
            } else {
                &cut.b_noun
            }
        })
    })
}

/// Whether question `q` (lower case) names `name` (lower case) as whole words.
fn named_in(q: &str, name: &str) -> bool {
    q.match_indices(name).any(|(at, _)| {
        let before = q[..at].chars().next_back();
        let after = q[at + name.len()..].chars().next();
        before.is_none_or(|c| !c.is_alphanumeric()) && after.is_none_or(|c| !c.is_alphanumeric())
    })
}

/// The predicate a cluster of skeletons states, when it was seen with enough subjects.
fn predicate(
    groups: &[Vec<Cut>],
    cluster: &[(usize, bool)],
    asked: &[String],
    options: &Options,
    types: &mut Types,
    type_nouns: &BTreeSet<String>,
    names_used: &mut BTreeSet<String>,
) -> Option<ProposedPredicate> {
    // Facts in the first group's orientation: (first slot, second slot).
    let mut facts: Vec<(String, String, &Cut)> = Vec::new();
    for &(g, flipped) in cluster {
        for cut in &groups[g] {
            if flipped {
                facts.push((cut.b.clone(), cut.a.clone(), cut));
            } else {
                facts.push((cut.a.clone(), cut.b.clone(), cut));
            }
        }
    }
    let number = groups[cluster[0].0][0].number;
    let text = groups[cluster[0].0][0].text;
    let pairs: BTreeSet<(String, String)> = facts
        .iter()
        .map(|(a, b, _)| (a.to_lowercase(), b.to_lowercase()))
        .collect();
    let firsts: BTreeSet<&String> = pairs.iter().map(|(a, _)| a).collect();
    if firsts.len() < options.min_subjects || pairs.len() < options.min_subjects {
        return None;
    }
    // The subject is the side the failed questions name (a question names what it asks
    // about, and asks for the other side); else the side each of whose names has one partner
    // (many products, one team each); else the first.
    let seconds: BTreeSet<&String> = pairs.iter().map(|(_, b)| b).collect();
    let names = |side: &BTreeSet<&String>, q: &str| side.iter().any(|n| named_in(q, n));
    let cluster_words: BTreeSet<String> = cluster
        .iter()
        .flat_map(|&(g, _)| groups[g][0].key.split_whitespace())
        .map(|w| stem(&bare(w).to_lowercase()))
        .filter(|w| w.len() > 2 && !STOPWORDS.contains(&w.as_str()) && !type_nouns.contains(w))
        .collect();
    let first_noun = side_noun(groups, cluster, true);
    let second_noun = side_noun(groups, cluster, false);
    let (mut name_first, mut name_second) = (0, 0);
    for q in asked {
        // Only questions that ask with the statements' own words speak for this relation.
        let related = q
            .split(|c: char| !c.is_alphanumeric())
            .any(|w| cluster_words.contains(&stem(w)));
        if !related {
            continue;
        }
        // "Which plan …" asks for a plan: that side is the object.
        if let Some(wanted) = wh_noun(q) {
            if first_noun.as_deref() == Some(wanted.as_str()) {
                name_second += 2;
            } else if second_noun.as_deref() == Some(wanted.as_str()) {
                name_first += 2;
            }
        }
        match (names(&firsts, q), names(&seconds, q)) {
            (true, false) => name_first += 1,
            (false, true) => name_second += 1,
            _ => {}
        }
    }
    let swap = !number
        && !text
        && (name_second > name_first
            || (name_second == name_first && seconds.len() > firsts.len()));
    // A side's type: the noun every name of it carries, else none.
    let noun_of = |first: bool| -> Option<String> {
        let mut counts: BTreeMap<Option<String>, usize> = BTreeMap::new();
        for noun in side_nouns(groups, cluster, first) {
            *counts.entry(noun.clone()).or_default() += 1;
        }
        let (noun, count) = counts.into_iter().max_by_key(|(_, c)| *c)?;
        (count * 4 >= facts.len() * 3).then_some(noun).flatten()
    };
    let (subject_noun, object_noun) = if swap {
        (noun_of(false), noun_of(true))
    } else {
        (noun_of(true), noun_of(false))
    };
    let subject_type = subject_noun.clone().unwrap_or_else(|| "any".to_owned());
    let object_type = if number {
        "number".to_owned()
    } else if text {
        "text".to_owned()
    } else {
        object_noun.clone().unwrap_or_else(|| "name".to_owned())
    };
    for (noun, first) in [(&subject_noun, true), (&object_noun, false)] {
        if let Some(noun) = noun {
            let example = facts
                .first()
                .map(|(a, b, _)| if first != swap { a.clone() } else { b.clone() })
                .unwrap_or_default();
            types.add(noun, "type noun", &example);
        }
    }
    let mut patterns = Vec::new();
    let mut examples = Vec::new();
    let mut words: Vec<String> = Vec::new();
    for &(g, flipped) in cluster {
        let first_is_subject = flipped == swap;
        let (a, b) = if first_is_subject {
            ("{s}", "{o}")
        } else {
            ("{o}", "{s}")
        };
        for cut in &groups[g] {
            let pattern = cut
                .skeleton
                .replace("{A}", a)
                .replace("{B}", b)
                .replace("{N}", "{o:number}")
                .replace("{T}", "{o}");
            if patterns.len() < MAX_PATTERNS && !patterns.contains(&pattern) {
                patterns.push(pattern);
                if examples.len() < MAX_EXAMPLES {
                    examples.push(cut.sentence.clone());
                }
            }
        }
        for w in groups[g][0].key.split_whitespace() {
            let w = bare(w).to_lowercase();
            if w.len() > 2
                && w.chars().all(char::is_alphabetic)
                && !STOPWORDS.contains(&w.as_str())
                && !type_nouns.contains(&w)
                && !words.iter().any(|x| stem(x) == stem(&w))
            {
                words.push(w);
            }
        }
    }
    let base = if words.is_empty() {
        "relation".to_owned()
    } else {
        words.iter().take(2).cloned().collect::<Vec<_>>().join("_")
    };
    let mut name = base.clone();
    let mut n = 2;
    while names_used.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    names_used.insert(name.clone());
    let subjects: BTreeSet<String> = facts
        .iter()
        .map(|(a, b, _)| if swap { b } else { a }.to_lowercase())
        .collect();
    Some(ProposedPredicate {
        name,
        from: "statement".to_owned(),
        subject_type,
        object_type,
        subject: None,
        vocabulary: words,
        patterns,
        examples,
        subjects: subjects.len(),
        facts: facts
            .iter()
            .take(MAX_PREVIEW_FACTS)
            .map(|(a, b, cut)| {
                let (s, o) = if swap { (b, a) } else { (a, b) };
                PreviewFact {
                    subject: s.clone(),
                    object: o.clone(),
                    page: cut.page.clone(),
                }
            })
            .collect(),
        answers: Vec::new(),
    })
}
