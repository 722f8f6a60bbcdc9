//! The tenant's recent questions, kept for the analyst's gate to replay against the live graph
//! and a shadow before a rebuild goes live. Off the request path: [`QueryLog::record`] only puts
//! the question in a bounded buffer, and one task writes what is buffered in batches (what came
//! within [`GATHER`] of the first), keeping at most `keep` per tenant; when the buffer is full
//! the question is dropped and counted (`ontoloop_query_log_dropped_total`), so no answer ever
//! waits on the store.

use chrono::Utc;
use ontoloop_core::Caller;
use ontoloop_core::knowledge::Scope;
use ontoloop_store::{LoggedQuestion, Store};
use serde::{Deserialize, Serialize};

/// Questions kept per tenant: the newest, which the gate replays.
pub const RECENT_QUESTIONS: u64 = 1_000;

/// Questions buffered for the store at most.
pub const QUERY_LOG_BUFFER: usize = 1_024;

/// Questions written in one batch at most.
const BATCH: usize = 256;

/// How long the questions after a first one are gathered into its batch: the longest a
/// question waits to be logged (the gate's replay of the newest questions misses at most this
/// moment's).
pub const GATHER: std::time::Duration = std::time::Duration::from_millis(100);

/// Who asked, as the log keeps it: a replay answers with what they could read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Asker {
    /// The principal.
    pub principal: String,
    /// The groups their credentials carried.
    #[serde(default)]
    pub groups: Vec<String>,
}

impl Asker {
    /// The caller this asker was in `tenant`; `None` when the stored row is not one.
    pub fn caller(&self, tenant: &str) -> Option<Caller> {
        Caller::new(tenant, &self.principal)
            .ok()
            .map(|caller| caller.with_groups(self.groups.iter().cloned()))
    }
}

/// A handle on the buffer the task drains into the query log.
#[derive(Clone)]
pub struct QueryLog {
    sender: tokio::sync::mpsc::Sender<LoggedQuestion>,
}

impl QueryLog {
    /// A buffer of `capacity` questions and the task that writes them, keeping the newest `keep`
    /// of each tenant; the task ends when every handle is dropped. Must run inside a tokio
    /// runtime.
    pub fn start(store: Store, keep: u64, capacity: usize) -> Self {
        let (sender, mut buffered) = tokio::sync::mpsc::channel::<LoggedQuestion>(capacity.max(1));
        tokio::spawn(async move {
            let mut batch = Vec::with_capacity(BATCH);
            while buffered.recv_many(&mut batch, BATCH).await > 0 {
                // Questions come one at a time: those of the next moment join the first, so a
                // busy tenant's log costs a write every [`GATHER`] instead of one per question
                // (each a transaction on the store's one writer, which the analyst's commits
                // wait for).
                let gathered = tokio::time::sleep(GATHER);
                tokio::pin!(gathered);
                while batch.len() < BATCH {
                    let room = BATCH - batch.len();
                    tokio::select! {
                        () = &mut gathered => break,
                        got = buffered.recv_many(&mut batch, room) => {
                            if got == 0 {
                                break;
                            }
                        }
                    }
                }
                if let Err(err) = store.query_log_append(&batch, keep).await {
                    tracing::warn!(error = %err, questions = batch.len(), "cannot log questions");
                }
                batch.clear();
            }
        });
        Self { sender }
    }

    /// Buffers `caller`'s question `text` asked in `scope`, or drops and counts it when the
    /// buffer is full. Never waits.
    pub fn record(&self, caller: &Caller, text: &str, scope: &Scope) {
        let asker = Asker {
            principal: caller.principal().to_owned(),
            groups: caller.groups().to_vec(),
        };
        let question = LoggedQuestion {
            tenant: caller.tenant().to_owned(),
            question: text.to_owned(),
            scope: scope.encode(),
            caller: serde_json::to_string(&asker).unwrap_or_default(),
            asked_at: Utc::now(),
        };
        if self.sender.try_send(question).is_err() {
            ontoloop_observability::metrics::global().add(
                "ontoloop_query_log_dropped_total",
                "Questions not kept for the gate's replay because the buffer to the store was \
                 full.",
                &[],
                1.0,
            );
        }
    }
}
