//! `ontoloop patterns`: the patterns the analyst found in failure signals.

use std::path::Path;
use std::process::ExitCode;

use ontoloop_proto::v1;

use crate::print;

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
        super::call_and_print(
            config,
            &self.caller,
            "patterns",
            |caller| Ok(v1::ListPatternsRequest { caller, limit: 0 }),
            |mut c, request| async move { c.analyst.list_patterns(request).await },
            print::patterns,
            self.json,
        )
        .await
    }
}
