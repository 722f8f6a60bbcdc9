//! The short text each MCP answer is also given as, for clients that show text only. The
//! structured answer is the gRPC reply itself, as `ontoloop_proto::json` writes it.

use std::fmt::Write as _;

use ontoloop_proto::json::{citation_status_name, rfc3339};
use ontoloop_proto::v1;

/// A few lines a person or a model can read.
pub trait Render {
    /// The text.
    fn render(&self) -> String;
}

/// A `NEEDS_SCOPE` answer's scope as a reader sees it listed: `region=EU`, or "everywhere else"
/// for the value that holds outside every narrower scope listed.
pub fn scope_label(scope: &str) -> &str {
    if scope.is_empty() {
        "everywhere else"
    } else {
        scope
    }
}

/// How many `items` there are (`3 items`), then a line for each.
fn counted<T>(items: &[T], noun: &str, line: impl Fn(&T) -> String) -> String {
    let mut text = format!("{} {noun}", items.len());
    for item in items {
        text.push('\n');
        text.push_str(&line(item));
    }
    text
}

/// An enum value's protobuf name without its prefix (`ANSWERED`, `BLOCK`, `HIGH`).
fn short<E: TryFrom<i32>>(value: i32, prefix: &str, name: impl Fn(&E) -> &'static str) -> String {
    E::try_from(value)
        .map(|e| name(&e).trim_start_matches(prefix).to_owned())
        .unwrap_or_else(|_| value.to_string())
}

impl Render for v1::Answer {
    fn render(&self) -> String {
        if self.status == v1::AnswerStatus::Abstained as i32 {
            return format!("abstained: {}", self.abstain_reason);
        }
        if self.status == v1::AnswerStatus::AnsweredPassages as i32 {
            return passages_text(self);
        }
        let status = short(self.status, "ANSWER_STATUS_", v1::AnswerStatus::as_str_name);
        if self.status == v1::AnswerStatus::NeedsScope as i32 {
            let mut text = format!("the value depends on the scope; ask with `scope` [{status}]");
            for v in &self.scoped {
                let _ = write!(text, "\n  {}: {}", scope_label(&v.scope), v.value);
            }
            return text;
        }
        let mut text = format!("{} [{status}]", self.value);
        if self.values.len() > 1 {
            let _ = write!(text, "\nopen conflict between: {}", self.values.join(", "));
        }
        for hedge in &self.hedges {
            let _ = write!(text, "\nhedge {}: {}", hedge.code, hedge.message);
        }
        for e in &self.upcoming {
            let _ = write!(
                text,
                "\nchanges to {} from {} (announced by {}@{}, {})",
                e.value,
                rfc3339(e.valid_from.as_ref()).as_deref().unwrap_or("?"),
                e.source_id,
                e.source_version,
                e.origin
            );
        }
        let source = |text: &mut String, e: &v1::Evidence| {
            let _ = write!(
                text,
                "\n  source {}@{} ({}, authority {}): {}",
                e.source_id, e.source_version, e.origin, e.authority, e.value
            );
        };
        for hop in &self.hops {
            let _ = write!(text, "\n{} -{}-> {}", hop.entity, hop.predicate, hop.value);
            hop.evidence.iter().for_each(|e| source(&mut text, e));
        }
        // Without hops (a page match), the final value's evidence is all there is.
        if self.hops.is_empty() {
            self.evidence.iter().for_each(|e| source(&mut text, e));
        }
        text
    }
}

/// A question about an entity as a whole, or one no fact answers: what is known of the entity,
/// then the passages.
fn passages_text(answer: &v1::Answer) -> String {
    let mut text = if answer.hops.is_empty() {
        "no fact answers this; these passages may:".to_owned()
    } else {
        format!("what is known of {}:", answer.entity)
    };
    for hop in &answer.hops {
        let _ = write!(text, "\n  {}: {}", hop.predicate, hop.value);
        if let Some(e) = hop.evidence.first() {
            let _ = write!(
                text,
                " ({}@{}, {})",
                e.source_id, e.source_version, e.origin
            );
        }
    }
    if !answer.hops.is_empty() && !answer.passages.is_empty() {
        text.push_str("\npassages that name it:");
    }
    for p in &answer.passages {
        let _ = write!(
            text,
            "\n  {}@{} [{}..{}] {}: {}",
            p.source_id, p.source_version, p.start, p.end, p.title, p.text
        );
    }
    text
}

impl Render for v1::SearchResponse {
    fn render(&self) -> String {
        let ranking = short(
            self.ranking,
            "PASSAGE_RANKING_",
            v1::PassageRanking::as_str_name,
        );
        let mut text = format!("{} passages [{ranking}]", self.hits.len());
        for hit in &self.hits {
            let Some(p) = &hit.passage else {
                continue;
            };
            let _ = write!(
                text,
                "\n  {}@{} [{}..{}] {}: {}",
                p.source_id, p.source_version, p.start, p.end, p.title, p.text
            );
            if !hit.entities.is_empty() {
                let names: Vec<&str> = hit.entities.iter().map(|e| e.name.as_str()).collect();
                let _ = write!(text, "\n    names: {}", names.join(", "));
            }
        }
        text
    }
}

impl Render for v1::CitationResolution {
    fn render(&self) -> String {
        let status = citation_status_name(self.status);
        match &self.passage {
            Some(p) => format!(
                "{status}: {}@{} [{}..{}] {}: {}",
                p.source_id, p.source_version, p.start, p.end, p.title, p.text
            ),
            None => status,
        }
    }
}

impl Render for v1::ValidateResponse {
    fn render(&self) -> String {
        let mut text = short(self.overall, "VERDICT_", v1::Verdict::as_str_name);
        for v in &self.verdicts {
            let claim = v
                .claim
                .as_ref()
                .map(|c| format!("{} {} {}", c.subject, c.predicate, c.object))
                .unwrap_or_default();
            let verdict = short(v.verdict, "VERDICT_", v1::Verdict::as_str_name);
            let _ = write!(text, "\n{verdict} {claim}");
            for r in &v.reasons {
                let _ = write!(text, "\n  {}: {}", r.code, r.message);
            }
        }
        text
    }
}

impl Render for v1::SignalAck {
    fn render(&self) -> String {
        let severity = short(self.severity, "SEVERITY_", v1::Severity::as_str_name);
        if self.duplicate {
            format!("duplicate (already recorded), severity {severity}")
        } else {
            format!("recorded, severity {severity}")
        }
    }
}

impl Render for v1::PlateResponse {
    fn render(&self) -> String {
        counted(&self.items, "items", |item| {
            format!(
                "{:.3} {} {} ({}, {})",
                item.score, item.item_id, item.title, item.service, item.severity
            )
        })
    }
}

impl Render for v1::ListPatternsResponse {
    fn render(&self) -> String {
        counted(&self.patterns, "patterns", |p| {
            format!(
                "{} {} {:?}: {} signals from {} agents, {} ({})",
                short(p.severity, "SEVERITY_", v1::Severity::as_str_name),
                p.kind,
                p.key,
                p.signal_count,
                p.agent_count,
                p.status,
                p.action
            )
        })
    }
}
