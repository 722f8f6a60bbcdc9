//! `ontoloop plate`: the caller's work items ranked through the dimensional filters.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use ontoloop_proto::v1;

use crate::print;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Who asks, as TENANT/PRINCIPAL (the principal is a person id of the organisation).
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Most items to show (default: the `plate.limit` setting).
    #[arg(long, default_value_t = 0)]
    limit: u32,
    /// Rank as of this instant (RFC 3339) instead of now.
    #[arg(long)]
    as_of: Option<String>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        super::call_and_print(
            config,
            &self.caller,
            "plate",
            |caller| {
                let as_of = match self.as_of {
                    Some(text) => Some(ontoloop_proto::convert::timestamp(
                        chrono::DateTime::parse_from_rfc3339(&text)
                            .with_context(|| format!("--as-of {text:?}: expected RFC 3339"))?
                            .with_timezone(&chrono::Utc),
                    )),
                    None => None,
                };
                Ok(v1::PlateRequest {
                    caller,
                    limit: self.limit,
                    as_of,
                })
            },
            |mut c, request| async move { c.retrieval.plate(request).await },
            print::plate,
            self.json,
        )
        .await
    }
}
