//! How a drift report reads: as JSON, as text tables for a person, as CSV of every ask.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use ontoloop_core::world::{Grade, World};

use super::{Mode, Report};

/// `part` of `whole` in whole percent; `-` of nothing.
fn pct(part: u64, whole: u64) -> String {
    if whole == 0 {
        "-".to_owned()
    } else {
        format!("{:.0}%", 100.0 * part as f64 / whole as f64)
    }
}

impl Report {
    /// A report of `world` with nothing in it yet.
    pub(super) fn empty(world: &World) -> Self {
        Self {
            rows: Vec::new(),
            costs: Vec::new(),
            repair: Vec::new(),
            passages: Vec::new(),
            answers: Vec::new(),
            world: world.name.clone(),
        }
    }

    /// The JSON form: `{"rows":[...],"costs":[...],"repair":[...],"passages":[...]}`.
    pub fn to_json(&self) -> anyhow::Result<String> {
        Ok(serde_json::to_string(self)?)
    }

    /// The tables, in the layout of the study, with its published column where the world has one.
    pub fn to_text(&self, world: &World, mode: Mode) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "drift benchmark · world {} · {} mode",
            world.name,
            if mode == Mode::Structured {
                "structured"
            } else {
                "natural-language"
            }
        );
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<16} {:<13} {:>11} {:>9} {:>9} {:>9} {:>8} {:>16}   study (all/drifted)",
            "design", "scenario", "all", "drifted", "wrong", "wrong", "abstain", "hedged-when-",
        );
        let _ = writeln!(
            out,
            "{:<16} {:<13} {:>11} {:>9} {:>9} {:>9} {:>8} {:>16}",
            "", "", "answers", "answers", "unhedged", "hedged", "", "right"
        );
        for row in &self.rows {
            let published = world
                .published(&row.design, &row.scenario)
                .map(|(all, drifted)| format!("{all:.0}% / {drifted:.0}%"))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{:<16} {:<13} {:>11} {:>9} {:>9} {:>9} {:>8} {:>16}   {}",
                row.design,
                row.scenario,
                format!(
                    "{} ({}/{})",
                    pct(row.all_correct, row.all_total),
                    row.all_correct,
                    row.all_total
                ),
                pct(row.drifted_correct, row.drifted_total),
                row.wrong_unhedged,
                row.wrong_hedged,
                row.abstain,
                format!("{} of {}", row.hedged_when_right, row.right_total),
                published
            );
        }
        let _ = writeln!(out);
        let _ = writeln!(
            out,
            "{:<28} {:>6} {:>11} {:>16} {:>13}",
            "approach", "event", "pages read", "est. tokens (*)", "graph writes"
        );
        for cost in &self.costs {
            let _ = writeln!(
                out,
                "{:<28} {:>6} {:>11} {:>16} {:>13}",
                cost.approach, cost.event, cost.pages_read, cost.est_tokens, cost.graph_writes
            );
        }
        let _ = writeln!(
            out,
            "(*) estimated as characters read / 4; event 0 is the initial load"
        );
        for repair in &self.repair {
            let _ = writeln!(
                out,
                "repair ({}): read {} of {} pages; graph-only answers at the last checkpoint: {}/{} after repair, {}/{} after a full rebuild",
                repair.scenario,
                repair.repair_pages_read,
                repair.pages_total,
                repair.repair_correct,
                repair.asks,
                repair.rebuild_correct,
                repair.asks
            );
        }
        if self.rows.iter().any(|r| r.cited_deleted > 0)
            || self.passages.iter().any(|r| r.cited_deleted > 0)
            || world.deletes_pages()
        {
            let mut cited: BTreeMap<&str, (u64, u64)> = BTreeMap::new();
            for row in &self.rows {
                let entry = cited.entry(row.design.as_str()).or_default();
                entry.0 += row.cited_deleted;
                entry.1 += row.all_total;
            }
            let cited: Vec<String> = cited
                .iter()
                .map(|(design, (n, of))| format!("{design} {n} of {of}"))
                .collect();
            let _ = writeln!(
                out,
                "answers citing a page deleted by then: {}",
                cited.join(", ")
            );
        }
        if self.rows.iter().any(|r| r.upcoming_expected > 0) {
            let noted: Vec<String> = self
                .rows
                .iter()
                .map(|r| {
                    format!(
                        "{} ({}) {} of {}, {} unexpected",
                        r.design,
                        r.scenario,
                        r.upcoming_noted,
                        r.upcoming_expected,
                        r.upcoming_unexpected
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "changes announced for later, noted beside the value in effect: {}",
                noted.join(", ")
            );
        }
        if self
            .rows
            .iter()
            .any(|r| r.needs_scope_expected + r.needs_scope_unexpected > 0)
        {
            let exact: Vec<String> = self
                .rows
                .iter()
                .map(|r| {
                    format!(
                        "{} ({}) {} of {}, {} where one value holds",
                        r.design,
                        r.scenario,
                        r.needs_scope_exact,
                        r.needs_scope_expected,
                        r.needs_scope_unexpected
                    )
                })
                .collect();
            let _ = writeln!(
                out,
                "values that differ by scope, NEEDS_SCOPE with exactly each scope's value: {}",
                exact.join(", ")
            );
        }
        if !self.passages.is_empty() {
            let _ = writeln!(out);
            let _ = writeln!(
                out,
                "questions no slot answers (ontoloop; recall@3 of the default ranking, then of BM25, dense and fused alone; n/a: no sentence-encoder model, or the vectors not built yet)"
            );
            let _ = writeln!(
                out,
                "{:<13} {:>6} {:>17} {:>13} {:>13} {:>13} {:>13} {:>14}",
                "scenario",
                "asked",
                "passages offered",
                "recall@3",
                "BM25",
                "dense",
                "fused",
                "cited deleted"
            );
            let recall = |found: Option<u64>, asked: u64| {
                found.map_or_else(
                    || "n/a".to_owned(),
                    |n| format!("{} ({n}/{asked})", pct(n, asked)),
                )
            };
            for row in &self.passages {
                let _ = writeln!(
                    out,
                    "{:<13} {:>6} {:>17} {:>13} {:>13} {:>13} {:>13} {:>14}",
                    row.scenario,
                    row.asked,
                    row.answered,
                    recall(Some(row.found_in_top3), row.asked),
                    recall(Some(row.found_in_top3_bm25), row.asked),
                    recall(row.found_in_top3_dense, row.asked),
                    recall(row.found_in_top3_fused, row.asked),
                    row.cited_deleted
                );
            }
        }
        out
    }

    /// Every answer with the expected value and why, as CSV.
    pub fn to_csv(&self) -> String {
        let mut out = String::from(
            "world,design,scenario,step,question,ask,expected,answer,grade,hedged,drifted,why\n",
        );
        let field = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
        for a in &self.answers {
            let grade = match a.grade {
                Grade::Correct => "correct",
                Grade::Wrong => "wrong",
                Grade::Abstain => "abstain",
            };
            let _ = writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{}",
                field(&self.world),
                field(&a.design),
                field(&a.scenario),
                a.step,
                field(&a.question),
                field(&a.ask),
                field(&a.expected),
                field(&a.answer),
                grade,
                a.hedged,
                a.drifted,
                field(&a.why)
            );
        }
        out
    }
}
