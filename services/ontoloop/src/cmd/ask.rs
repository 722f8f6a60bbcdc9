//! `ontoloop ask`: a question in natural language, answered with its provenance.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use ontoloop_proto::v1;

use crate::print;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The question.
    text: String,
    /// Who asks, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Answer only once this intake sequence number is applied (read-your-writes).
    #[arg(long, default_value_t = 0)]
    min_sequence: u64,
    /// ontoloop (default) or a study baseline: Rag, Graph, Hybrid, HybridVersioned, FlatMetadata.
    #[arg(long, default_value = "ontoloop")]
    design: String,
    /// How passages are ranked when no slot answers: fused (BM25 and sentence-embedding
    /// similarity by reciprocal rank), bm25 or dense. Default: fused when the service has the
    /// model, else bm25.
    #[arg(long, value_enum)]
    ranking: Option<Ranking>,
    /// Where the answer should hold, as `key=value` pairs joined by commas (`region=EU`).
    /// Default: the scope the question names ("... in the EU?"), else everywhere.
    #[arg(long, default_value = "")]
    scope: String,
    /// Answer as of this instant (RFC 3339, or a date YYYY-MM-DD meaning its start in UTC)
    /// instead of now: what the pages said then.
    #[arg(long)]
    as_of: Option<String>,
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
}

/// `--ranking`'s values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum Ranking {
    Bm25,
    Dense,
    Fused,
}

impl From<Ranking> for v1::PassageRanking {
    fn from(ranking: Ranking) -> Self {
        match ranking {
            Ranking::Bm25 => v1::PassageRanking::Bm25,
            Ranking::Dense => v1::PassageRanking::Dense,
            Ranking::Fused => v1::PassageRanking::Fused,
        }
    }
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        super::call_and_print(
            config,
            &self.caller,
            "ask",
            |caller| {
                let as_of = self.as_of.as_deref().map(instant).transpose()?;
                Ok(v1::AskRequest {
                    caller,
                    text: self.text,
                    min_sequence: self.min_sequence,
                    as_of: as_of.map(ontoloop_proto::convert::timestamp),
                    design: self.design,
                    passage_ranking: self
                        .ranking
                        .map_or(v1::PassageRanking::Unspecified, Into::into)
                        as i32,
                    scope: self.scope,
                })
            },
            |mut c, request| async move { c.retrieval.ask(request).await },
            print::answer,
            self.json,
        )
        .await
    }
}

/// `--as-of`: an RFC 3339 instant, or a date (its start, UTC).
pub(crate) fn instant(text: &str) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Ok(at.with_timezone(&chrono::Utc));
    }
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .with_context(|| format!("--as-of {text:?}: expected RFC 3339 or YYYY-MM-DD"))?;
    Ok(date.and_time(chrono::NaiveTime::MIN).and_utc())
}
