//! `ontoloop patterns`: the patterns the analyst found in failure signals.

use std::path::Path;
use std::process::ExitCode;

use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Whose tenant, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let request = v1::ListPatternsRequest {
            caller: session.wire_caller()?,
            limit: 0,
        };
        let patterns = session
            .call("patterns", |mut c| async move {
                c.analyst.list_patterns(request).await
            })
            .await?;
        print::patterns(&patterns, self.json)?;
        Ok(ExitCode::SUCCESS)
    }
}
