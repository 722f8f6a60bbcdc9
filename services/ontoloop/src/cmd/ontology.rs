//! `ontoloop ontology propose`: an ontology proposed from the tenant's pages and the questions
//! its agents failed to get answered (a `graph.maintain` event of mode `propose-ontology`),
//! waited for, and shown as its reviewer will see it: an ontology change always goes to a human
//! (`ontoloop review decide`, or the dashboard). Needs the admin role.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use chrono::Utc;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;

use crate::print;
use crate::session::{Session, rpc};

/// How many times the maintenance runs are asked for, waiting for the proposal to be drafted
/// (each ask waits up to the read-your-writes timeout).
const WAITS: u32 = 60;

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Propose an ontology from the tenant's pages and failed questions, queued for review;
    /// prints it (predicates with types, patterns, examples and a preview).
    Propose {
        /// Whose tenant, as TENANT/PRINCIPAL (an admin).
        #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
        caller: String,
        /// Print JSON: {"sequence", "update", "proposal"}.
        #[arg(long)]
        json: bool,
    },
}

impl Command {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let Command::Propose { caller, json } = self;
        let mut session = Session::load(config, &[])?.acting_as(&caller)?;
        let event = Event::GraphMaintain {
            mode: "propose-ontology".to_owned(),
        };
        event.validate()?;
        let caller = session.caller()?.clone();
        let wire_caller = session.wire_caller()?;
        let clients = session.clients().await?;
        let pushed = ontoloop_proto::convert::event_to_wire(&caller, &event, Utc::now());
        let sequence = clients
            .telemetry
            .push_event(pushed)
            .await
            .map_err(rpc("graph.maintain"))?
            .into_inner()
            .sequence;
        let mut waited = 0;
        loop {
            let request = v1::ListMaintenanceRunsRequest {
                caller: wire_caller.clone(),
                min_sequence: sequence,
            };
            match clients.analyst.list_maintenance_runs(request).await {
                Ok(_) => break,
                Err(status)
                    if matches!(
                        status.code(),
                        tonic::Code::Unavailable | tonic::Code::DeadlineExceeded
                    ) && waited < WAITS =>
                {
                    waited += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
                Err(status) => {
                    return Err(status).context("wait for the proposal to be drafted");
                }
            }
        }
        let next = clients
            .analyst
            .next_review(v1::NextReviewRequest {
                caller: wire_caller,
                expertise: vec![ontoloop_core::supervisor::ONTOLOGY_DOMAIN.to_owned()],
            })
            .await
            .map_err(rpc("review next"))?
            .into_inner();
        let update = next
            .update
            .filter(|u| u.domain == ontoloop_core::supervisor::ONTOLOGY_DOMAIN);
        print::ontology_proposal(sequence, update.as_ref(), json)?;
        Ok(ExitCode::SUCCESS)
    }
}
