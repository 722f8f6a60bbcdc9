//! `ontoloop ask`: a question in natural language, answered with its provenance.

use std::path::Path;
use std::process::ExitCode;

use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

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
    /// ontoloop (default) or a study baseline: Rag, Graph, Hybrid, HybridVersioned.
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
    /// Print the answer as JSON.
    #[arg(long)]
    json: bool,
}

/// `--ranking`'s values.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Ranking {
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
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let request = v1::AskRequest {
            caller: session.wire_caller()?,
            text: self.text,
            min_sequence: self.min_sequence,
            as_of: None,
            design: self.design,
            passage_ranking: self
                .ranking
                .map_or(v1::PassageRanking::Unspecified, Into::into)
                as i32,
            scope: self.scope,
        };
        let answer = session
            .call("ask", |mut c| async move { c.retrieval.ask(request).await })
            .await?;
        print::answer(&answer, self.json)?;
        Ok(ExitCode::SUCCESS)
    }
}
