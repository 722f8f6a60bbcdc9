//! `ontoloop review next|decide`: the review queue of the statistical supervisor.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Show the next update to review: your expertise domains first, then priority, then age.
    Next {
        /// The reviewer, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// A domain you are expert in (repeatable), for example financial.
        #[arg(long = "expertise", value_name = "DOMAIN")]
        expertise: Vec<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Decide an update: approve, reject, modify (with --value) or defer.
    Decide {
        /// The update id (from `review next`).
        update: String,
        /// approve, reject, modify or defer.
        decision: String,
        /// The reviewer, as TENANT/PRINCIPAL.
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// The value to apply instead (modify).
        #[arg(long, default_value = "")]
        value: String,
        /// A note kept with the decision.
        #[arg(long, default_value = "")]
        note: String,
    },
}

impl Command {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        match self {
            Command::Next {
                caller,
                expertise,
                json,
            } => {
                let mut session = Session::load(config, &[])?.acting_as(&caller)?;
                let request = v1::NextReviewRequest {
                    caller: session.wire_caller()?,
                    expertise,
                };
                let next = session
                    .call("review next", |mut c| async move {
                        c.analyst.next_review(request).await
                    })
                    .await?;
                print::update(next.update.as_ref(), json)?;
            }
            Command::Decide {
                update,
                decision,
                caller,
                value,
                note,
            } => {
                let mut session = Session::load(config, &[])?.acting_as(&caller)?;
                let wire =
                    v1::Decision::from_str_name(&format!("DECISION_{}", decision.to_uppercase()))
                        .filter(|d| *d != v1::Decision::Unspecified)
                        .with_context(|| {
                            format!("decision {decision:?}: use approve, reject, modify or defer")
                        })?;
                let request = v1::DecideRequest {
                    caller: session.wire_caller()?,
                    update_id: update.clone(),
                    decision: wire as i32,
                    new_value: value,
                    note,
                };
                let outcome = session
                    .call("review decide", |mut c| async move {
                        c.analyst.decide(request).await
                    })
                    .await?;
                print::decided(&update, &decision, &outcome);
            }
        }
        Ok(ExitCode::SUCCESS)
    }
}
