//! `ontoloop ingest`: events from a file pushed through the telemetry intake.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use ontoloop_core::events::Event;
use ontoloop_testkit::world::World;

use crate::print;
use crate::session::{Session, rpc};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file.
    file: PathBuf,
    /// Whose tenant, as TENANT/PRINCIPAL.
    #[arg(long = "as", value_name = "TENANT/PRINCIPAL")]
    caller: String,
}

impl Args {
    pub async fn run(self, config: Option<&Path>) -> anyhow::Result<ExitCode> {
        let mut session = Session::load(config, &[])?.acting_as(&self.caller)?;
        let file = &self.file;
        let text =
            std::fs::read_to_string(file).with_context(|| format!("read {}", file.display()))?;
        let events = events_from_file(&text)
            .with_context(|| format!("read events from {}", file.display()))?;
        let caller = session.caller()?.clone();
        let telemetry = &mut session.clients().await?.telemetry;
        let mut last = 0;
        for (i, (event, at)) in events.iter().enumerate() {
            let pushed =
                ontoloop_proto::convert::event_to_wire(&caller, event, at.unwrap_or_else(Utc::now));
            let ack = telemetry
                .push_event(pushed)
                .await
                .map_err(rpc(&format!("event {i} ({})", event.kind())))?;
            last = ack.into_inner().sequence;
        }
        print::pushed(events.len(), last);
        Ok(ExitCode::SUCCESS)
    }
}

/// Events in a file: a world file (ontology plus the first scenario's timeline), a JSON array
/// of events, or one event per line.
fn events_from_file(text: &str) -> anyhow::Result<Vec<(Event, Option<DateTime<Utc>>)>> {
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') && trimmed.contains("\"ontoloop.world/v1\"") {
        let world = World::parse(text)?;
        let mut events = vec![(
            Event::OntologySet {
                ontology: world.ontology.clone(),
            },
            None,
        )];
        if let Some(scenario) = world.parsed.first() {
            for entry in &scenario.timeline {
                if let Some(event) = entry.kind.event(false) {
                    events.push((event, Some(entry.at)));
                }
            }
        }
        return Ok(events);
    }
    let values: Vec<serde_json::Value> = if trimmed.starts_with('[') {
        serde_json::from_str(text).context("parse the JSON array")?
    } else {
        text.lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| serde_json::from_str(l).with_context(|| format!("line {}", i + 1)))
            .collect::<anyhow::Result<_>>()?
    };
    values
        .into_iter()
        .enumerate()
        .map(|(i, mut value)| {
            let at = value
                .as_object_mut()
                .and_then(|o| o.remove("at"))
                .map(|v| {
                    serde_json::from_value::<DateTime<Utc>>(v)
                        .with_context(|| format!("event {i}: at"))
                })
                .transpose()?;
            let event: Event =
                serde_json::from_value(value).with_context(|| format!("event {i}"))?;
            event.validate().with_context(|| format!("event {i}"))?;
            Ok((event, at))
        })
        .collect()
}
