//! `ontoloop maintain`: graph maintenance asked of the analyst through the telemetry intake —
//! `patch`, `repair`, `rebuild` (which passes the gate) or `rollback` (the graph as it was
//! before the last change the gate let go live). Needs the admin role.

use std::path::Path;
use std::process::ExitCode;

use chrono::Utc;
use ontoloop_core::events::Event;

use crate::print;
use crate::session::{Session, rpc};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// patch, repair, rebuild or rollback.
    mode: String,
    /// Whose tenant, as TENANT/PRINCIPAL (an admin).
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let event = Event::GraphMaintain { mode: self.mode };
        event.validate()?;
        let caller = session.caller()?.clone();
        let telemetry = &mut session.clients().await?.telemetry;
        let pushed = ontoloop_proto::convert::event_to_wire(&caller, &event, Utc::now());
        let ack = telemetry
            .push_event(pushed)
            .await
            .map_err(rpc("graph.maintain"))?;
        print::pushed(1, ack.into_inner().sequence);
        Ok(ExitCode::SUCCESS)
    }
}
