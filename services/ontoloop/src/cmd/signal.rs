//! `ontoloop signal`: one failure signal reported through the telemetry intake.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use ontoloop_proto::v1;

use crate::print;
use crate::session::Session;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Who reports, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
    /// entity_missing, relationship_unknown, temporal_stale, confidence_drop or query_pattern.
    #[arg(long = "type")]
    kind: String,
    /// The query that failed.
    #[arg(long)]
    query: String,
    /// The entity it concerns.
    #[arg(long, default_value = "")]
    entity: String,
    /// The relationship it concerns.
    #[arg(long, default_value = "")]
    relationship: String,
    /// The graph region it concerns.
    #[arg(long, default_value = "")]
    sector: String,
    /// The agent that saw the failure (default: the principal).
    #[arg(long)]
    agent: Option<String>,
    /// Idempotency key (default: a fresh one).
    #[arg(long)]
    key: Option<String>,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let kind = &self.kind;
        let r#type = v1::SignalType::from_str_name(&format!("SIGNAL_TYPE_{}", kind.to_uppercase()))
            .with_context(|| format!("--type {kind:?}: use entity_missing, relationship_unknown, temporal_stale, confidence_drop or query_pattern"))?;
        let request = v1::Signal {
            caller: session.wire_caller()?,
            r#type: r#type as i32,
            query: self.query,
            entity: self.entity,
            relationship: self.relationship,
            sector: self.sector,
            agent_id: match self.agent {
                Some(agent) => agent,
                None => session.caller()?.principal().to_owned(),
            },
            idempotency_key: self.key.unwrap_or_else(|| {
                format!(
                    "cli-{}",
                    chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default()
                )
            }),
            observed_at: None,
        };
        let ack = session
            .call("signal", |mut c| async move {
                c.telemetry.report_signal(request).await
            })
            .await?;
        print::signal_ack(&ack);
        Ok(ExitCode::SUCCESS)
    }
}
