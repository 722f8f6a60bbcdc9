//! The extraction pipeline's `model` stage with its cache kept in the store, so a restart, a
//! patch, a repair or a rebuild never pays twice for a sentence: at start-up the stored answers
//! (the newest, as many as the client holds) are loaded into the client; every fresh answer the
//! client hands to a bounded channel is written behind, in batches, by a task. A row that does
//! not read is skipped with a warning; a write that fails is logged and the answers stay in
//! memory only. The task ends once the client is dropped and what it handed over is written.

use chrono::Utc;
use ontoloop_llm::{CACHE_SENTENCES, CacheEntry, LlmError, LlmSettings, ModelClient};
use ontoloop_store::{CachedAnswer, Store};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Fresh answers waiting to be written at most; beyond, they stay in memory only.
const PENDING: usize = 4_096;

/// Answers written in one transaction at most.
const BATCH: usize = 256;

/// The model stage's client for `settings`, its cache filled from `store`, and the task that
/// writes its fresh answers back (ends when the client is dropped). Fails like
/// [`ModelClient::new`]; a store that cannot be read leaves the cache empty, said in the log.
pub async fn persisted_model_client(
    settings: &LlmSettings,
    store: &Store,
) -> Result<(ModelClient, JoinHandle<()>), LlmError> {
    let client = ModelClient::new(settings.clone())?;
    let limit = u64::try_from(CACHE_SENTENCES).unwrap_or(u64::MAX);
    match store
        .model_cache_load(&settings.model, &settings.prompt_version, limit)
        .await
    {
        Ok(rows) => {
            let preloaded = client.preload(rows.into_iter().map(|row| CacheEntry {
                key: row.key,
                claims: row.claims,
            }));
            if preloaded.skipped > 0 {
                tracing::warn!(
                    skipped = preloaded.skipped,
                    "skipped unreadable rows of the model stage's cache"
                );
            }
            tracing::debug!(
                loaded = preloaded.loaded,
                model = %settings.model,
                "model stage cache loaded from the store"
            );
        }
        Err(err) => {
            tracing::warn!(error = %err, "could not read the model stage's cache; starting empty");
        }
    }
    let (sink, answers) = mpsc::channel(PENDING);
    let writer = tokio::spawn(write_behind(
        store.clone(),
        settings.model.clone(),
        settings.prompt_version.clone(),
        answers,
    ));
    Ok((client.persisting(sink), writer))
}

/// Writes the answers as they come, as many at once as are waiting (up to [`BATCH`]).
async fn write_behind(
    store: Store,
    model: String,
    prompt_version: String,
    mut answers: mpsc::Receiver<CacheEntry>,
) {
    let keep = u64::try_from(CACHE_SENTENCES).unwrap_or(u64::MAX);
    let mut batch = Vec::with_capacity(BATCH);
    while answers.recv_many(&mut batch, BATCH).await > 0 {
        let now = Utc::now();
        let rows: Vec<CachedAnswer> = batch
            .drain(..)
            .map(|entry| CachedAnswer {
                key: entry.key,
                model: model.clone(),
                prompt_version: prompt_version.clone(),
                claims: entry.claims,
                created_at: now,
            })
            .collect();
        match store.model_cache_put(&rows, keep).await {
            Ok(evicted) if evicted > 0 => {
                tracing::debug!(
                    evicted,
                    "model stage cache at its bound; oldest answers evicted"
                );
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(
                error = %err,
                answers = rows.len(),
                "could not store model answers; they stay in memory only"
            ),
        }
    }
}
