//! The intake a run pushes to, and how it learns what the store holds and what was applied:
//! telemetry for the pushes, retrieval for the wait until they are applied, the analyst for the
//! pages the store holds (`ListPages`) and the tenant's backlog (progress).

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use ontoloop_core::Caller;
use ontoloop_core::events::Event;
use ontoloop_proto::v1;
use ontoloop_proto::v1::analyst_service_client::AnalystServiceClient;
use ontoloop_proto::v1::retrieval_service_client::RetrievalServiceClient;
use ontoloop_proto::v1::telemetry_service_client::TelemetryServiceClient;

use super::progress::{Counts, Progress};
use super::state::Entry;
use crate::client::Transport;

/// The telemetry intake, pushed to as one caller; retrieval, which says when what was pushed is
/// applied; and the analyst, which lists the pages the store holds.
#[derive(Clone)]
pub struct Intake {
    telemetry: TelemetryServiceClient<Transport>,
    retrieval: RetrievalServiceClient<Transport>,
    analyst: AnalystServiceClient<Transport>,
    caller: Caller,
}

/// Origins one `ListPages` request may name at most (more: every origin is listed and the
/// others left out here).
const MAX_LISTED_ORIGINS: usize = 64;

/// Whether the last event of a run was applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Applied {
    Yes,
    /// The analyst refused it, for this reason.
    Refused(String),
    /// Unknown: the caller may not read (an integration's token), or the wait ran out.
    Unknown(String),
}

impl Intake {
    /// Pushes through `telemetry` as `caller`; waits for events to apply through `retrieval`;
    /// lists what the store holds through `analyst`.
    pub fn new(
        telemetry: TelemetryServiceClient<Transport>,
        retrieval: RetrievalServiceClient<Transport>,
        analyst: AnalystServiceClient<Transport>,
        caller: Caller,
    ) -> Self {
        Self {
            telemetry,
            retrieval,
            analyst,
            caller,
        }
    }

    /// The pages of `origins` the store holds, by their newest version: origin and hashes.
    pub(super) async fn stored(
        &self,
        origins: &BTreeSet<String>,
    ) -> Result<HashMap<String, Entry>, tonic::Status> {
        let named: Vec<String> = if origins.len() <= MAX_LISTED_ORIGINS {
            origins.iter().cloned().collect()
        } else {
            Vec::new()
        };
        let mut held = HashMap::new();
        let mut after = String::new();
        loop {
            let request = v1::ListPagesRequest {
                caller: Some(v1::Caller::from(&self.caller)),
                min_sequence: 0,
                origins: named.clone(),
                after,
                limit: 0,
            };
            let slice = self.analyst.clone().list_pages(request).await?.into_inner();
            for page in slice.pages {
                if origins.contains(&page.origin) {
                    let entry = Entry::stored(page.origin, page.content_hash, page.title_hash);
                    held.insert(page.page_id, entry);
                }
            }
            if slice.next_after.is_empty() {
                return Ok(held);
            }
            after = slice.next_after;
        }
    }

    /// The caller pushing.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Pushes `event` as happening `at`; its intake sequence number.
    pub(super) async fn push(
        &self,
        event: &Event,
        at: DateTime<Utc>,
    ) -> Result<u64, tonic::Status> {
        let wire = ontoloop_proto::convert::event_to_wire(&self.caller, event, at);
        let ack = self.telemetry.clone().push_event(wire).await?;
        Ok(ack.into_inner().sequence)
    }

    /// Waits up to `timeout` until the event `seq` is applied. Every read RPC takes a
    /// `min_sequence` and answers once the event settled (FAILED_PRECONDITION with the reason
    /// when it was refused); ResolveCitation of a passage no page has is the cheapest of them
    /// and leaves no trace (no question logged, no signal).
    pub(super) async fn applied(&self, seq: u64, timeout: Duration) -> anyhow::Result<Applied> {
        use tonic::Code;
        let deadline = Instant::now() + timeout;
        loop {
            let request = v1::ResolveCitationRequest {
                caller: Some(v1::Caller::from(&self.caller)),
                source_id: "ontoloop-ingest-barrier".into(),
                source_version: 1,
                chunk_hash: "0000000000000000".into(),
                start: 0,
                end: 0,
                min_sequence: seq,
            };
            let status = match self.retrieval.clone().resolve_citation(request).await {
                Ok(_) => return Ok(Applied::Yes),
                Err(status) => status,
            };
            return Ok(match status.code() {
                Code::NotFound => Applied::Yes,
                Code::FailedPrecondition => Applied::Refused(status.message().to_owned()),
                Code::Unavailable | Code::DeadlineExceeded if Instant::now() < deadline => {
                    continue;
                }
                Code::Unavailable | Code::DeadlineExceeded => {
                    Applied::Unknown(format!("not applied within {}s", timeout.as_secs()))
                }
                Code::PermissionDenied | Code::Unauthenticated => Applied::Unknown(format!(
                    "the caller may not read, so cannot wait: {}",
                    status.message()
                )),
                code => anyhow::bail!("wait for event {seq}: {code:?}: {}", status.message()),
            });
        }
    }
}

/// How often the wait for a run to apply asks how far the analyst is.
const APPLIED_EVERY: Duration = Duration::from_secs(1);

impl Intake {
    /// [`Self::applied`], showing meanwhile how many of the run's `events` are applied: those
    /// pushed less the tenant's backlog (`TenantSummary`, role `reviewer`; without it the
    /// display says only that it waits).
    pub(super) async fn applied_showing(
        &self,
        seq: u64,
        timeout: Duration,
        progress: &mut Progress,
        counts: Counts,
        events: usize,
    ) -> anyhow::Result<Applied> {
        progress.waiting(counts, seq, None);
        let wait = self.applied(seq, timeout);
        tokio::pin!(wait);
        let mut tick = tokio::time::interval(APPLIED_EVERY);
        let mut asking = progress.shown();
        loop {
            tokio::select! {
                applied = &mut wait => return applied,
                _ = tick.tick(), if asking => match self.backlog().await {
                    Some(backlog) => {
                        let applied = events.saturating_sub(backlog as usize);
                        progress.waiting(counts, seq, Some((applied, events)));
                    }
                    None => asking = false,
                },
            }
        }
    }

    /// Events of the tenant accepted and not yet applied; `None` when the caller may not ask.
    pub(super) async fn backlog(&self) -> Option<u64> {
        let request = v1::TenantSummaryRequest {
            caller: Some(v1::Caller::from(&self.caller)),
            min_sequence: 0,
        };
        let summary = self.analyst.clone().tenant_summary(request).await.ok()?;
        Some(summary.into_inner().backlog)
    }
}
