//! `ontoloop validate`: an answer text checked by the firewall; exits 3 when it is blocked.

use std::path::Path;
use std::process::ExitCode;

use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The answer text.
    text: String,
    /// Who will read the answer, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// standard (default), high-risk or exploratory.
    #[arg(long, default_value = "standard")]
    context: String,
    /// Domain of the answer, for example financial.
    #[arg(long, default_value = "")]
    domain: String,
    /// Print the verdicts as JSON.
    #[arg(long)]
    json: bool,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let risk = match self.context.as_str() {
            "standard" => v1::RiskLevel::Unspecified,
            "high-risk" => v1::RiskLevel::High,
            "exploratory" => v1::RiskLevel::Exploratory,
            other => anyhow::bail!("--context {other:?}: use standard, high-risk or exploratory"),
        };
        let request = v1::ValidateRequest {
            caller: session.wire_caller()?,
            input: Some(v1::validate_request::Input::Text(self.text)),
            context: Some(v1::ValidationContext {
                domain: self.domain,
                risk: risk as i32,
            }),
            as_of: None,
        };
        let response = session
            .call("validate", |mut c| async move {
                c.firewall.validate(request).await
            })
            .await?;
        Ok(if print::verdicts(&response, self.json)? {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        })
    }
}
