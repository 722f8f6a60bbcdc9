//! `ontoloop plate`: the caller's work items ranked through the dimensional filters.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

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
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let as_of = match self.as_of {
            Some(text) => Some(ontoloop_proto::convert::timestamp(
                chrono::DateTime::parse_from_rfc3339(&text)
                    .with_context(|| format!("--as-of {text:?}: expected RFC 3339"))?
                    .with_timezone(&chrono::Utc),
            )),
            None => None,
        };
        let request = v1::PlateRequest {
            caller: session.wire_caller()?,
            limit: self.limit,
            as_of,
        };
        let plate = session
            .call(
                "plate",
                |mut c| async move { c.retrieval.plate(request).await },
            )
            .await?;
        print::plate(&plate, self.json)?;
        Ok(ExitCode::SUCCESS)
    }
}
