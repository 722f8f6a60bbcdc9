//! How one answer is graded against a world's ask, and what of it the CSV shows.

use std::collections::BTreeMap;

use ontoloop_core::world::{Grade, Outcome, grade};
use ontoloop_proto::v1;

/// An ask graded: by its value, or for a `needs_scope` ask by the scopes listed.
pub(super) fn grade_ask(ask: &ontoloop_core::world::Ask, answer: &v1::Answer) -> Grade {
    let needs_scope = answer.status == v1::AnswerStatus::NeedsScope as i32;
    match (&ask.needs_scope, ask.expect) {
        (Some(expected), _) => grade_scoped(expected, answer),
        // No value is right: a value given where none is right is wrong, hedged or not.
        (None, Some(Outcome::Abstain)) if needs_scope || value_of(answer).is_some() => Grade::Wrong,
        (None, Some(Outcome::Abstain)) => Grade::Correct,
        (None, Some(Outcome::NeedsScope)) if needs_scope => Grade::Correct,
        (None, Some(Outcome::NeedsScope)) if value_of(answer).is_some() => Grade::Wrong,
        (None, Some(Outcome::NeedsScope)) => Grade::Abstain,
        (None, None) => grade(&ask.expected, value_of(answer)),
    }
}

/// A `needs_scope` ask: correct when the answer is NEEDS_SCOPE listing exactly the expected
/// scopes (compared as scopes, `""` for everywhere) each with its expected value; an
/// abstention abstains; anything else is wrong.
fn grade_scoped(expected: &BTreeMap<String, String>, answer: &v1::Answer) -> Grade {
    if answer.status != v1::AnswerStatus::NeedsScope as i32 {
        return if value_of(answer).is_some() {
            Grade::Wrong
        } else {
            Grade::Abstain
        };
    }
    let key = |scope: &str| {
        ontoloop_core::knowledge::Scope::parse(scope)
            .map_or_else(|_| scope.to_owned(), |s| s.encode())
    };
    let listed: BTreeMap<String, &str> = answer
        .scoped
        .iter()
        .map(|v| (key(&v.scope), v.value.as_str()))
        .collect();
    let exact = listed.len() == answer.scoped.len()
        && listed.len() == expected.len()
        && expected.iter().all(|(scope, value)| {
            listed
                .get(&key(scope))
                .is_some_and(|got| grade(value, Some(got)) == Grade::Correct)
        });
    if exact { Grade::Correct } else { Grade::Wrong }
}

/// What an answer says, for the CSV: its value, or each scope's value.
pub(super) fn shown_value(answer: &v1::Answer) -> String {
    if answer.status == v1::AnswerStatus::NeedsScope as i32 {
        let scoped: Vec<String> = answer
            .scoped
            .iter()
            .map(|v| {
                let scope = if v.scope.is_empty() {
                    "everywhere"
                } else {
                    &v.scope
                };
                format!("{scope}: {}", v.value)
            })
            .collect();
        return format!("NEEDS_SCOPE {}", scoped.join("; "));
    }
    value_of(answer).unwrap_or_default().to_owned()
}

fn value_of(answer: &v1::Answer) -> Option<&str> {
    (answer.status != v1::AnswerStatus::Abstained as i32 && !answer.value.is_empty())
        .then_some(answer.value.as_str())
}
