//! `ontoloop search`: the passages that best match a query, each with its citation and the
//! entities it names.

use std::path::Path;
use std::process::ExitCode;

use ontoloop_proto::v1;

use super::ask::{Ranking, instant};
use crate::print;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The query, in words.
    query: String,
    /// Who searches, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Passages wanted, 1 to 100.
    #[arg(short, long, default_value_t = 10)]
    k: u32,
    /// How passages are ranked: fused (BM25 and sentence-embedding similarity by reciprocal
    /// rank), bm25 or dense. Default: fused when the service has the model, else bm25.
    #[arg(long, value_enum)]
    ranking: Option<Ranking>,
    /// Only pages of this origin (repeat for several).
    #[arg(long = "origin", value_name = "ORIGIN")]
    origins: Vec<String>,
    /// Only pages whose id starts with this (`docs/`).
    #[arg(long, default_value = "")]
    prefix: String,
    /// Only passages that hold in this scope, as `key=value` pairs joined by commas.
    #[arg(long, default_value = "")]
    scope: String,
    /// Search the pages as they were at this instant (RFC 3339, or a date YYYY-MM-DD meaning
    /// its start in UTC).
    #[arg(long)]
    as_of: Option<String>,
    /// Search only once this intake sequence number is applied (read-your-writes).
    #[arg(long, default_value_t = 0)]
    min_sequence: u64,
    /// Print the passages as JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        super::call_and_print(
            config,
            &self.caller,
            "search",
            |caller| {
                let as_of = self.as_of.as_deref().map(instant).transpose()?;
                Ok(v1::SearchRequest {
                    caller,
                    query: self.query,
                    k: self.k,
                    ranking: self
                        .ranking
                        .map_or(v1::PassageRanking::Unspecified, Into::into)
                        as i32,
                    min_sequence: self.min_sequence,
                    as_of: as_of.map(ontoloop_proto::convert::timestamp),
                    origins: self.origins,
                    page_prefix: self.prefix,
                    scope: self.scope,
                })
            },
            |mut c, request| async move { c.retrieval.search(request).await },
            print::found,
            self.json,
        )
        .await
    }
}
