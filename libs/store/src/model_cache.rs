//! The extraction pipeline's `model` stage answers, kept across restarts so a patch, repair or
//! rebuild never pays twice for a sentence: one row per sentence asked, keyed by the hex sha256
//! the model client computes (model, prompt version, prompt and schema — which fingerprint the
//! ontology — and the sentence), with the model's proposals as JSON. The store only keeps the
//! rows and their bound; reading them is the client's business (`ontoloop-llm`).
//!
//! Bounded: after each write, at most `keep` rows stay per model, the oldest evicted first.
//!
//! Rows are not per tenant: the key covers the ontology and the sentence, so two tenants share
//! an answer only for the very same sentence under the very same ontology, which tells neither
//! anything its own text does not. The sentence itself is not stored, only its hash.

use chrono::{DateTime, Utc};
use sea_orm::{
    ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
    TransactionTrait,
};

use crate::entity::model_cache;
use crate::rows::{Batch, Rows, evict_beyond};
use crate::{Store, StoreError};

/// One cached answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedAnswer {
    /// Hex sha256 of model, prompt version, prompt, schema and sentence.
    pub key: String,
    /// The model it came from.
    pub model: String,
    /// The prompt version it was asked with.
    pub prompt_version: String,
    /// The model's proposals for the sentence (JSON, unchecked here).
    pub claims: String,
    /// When it was answered.
    pub created_at: DateTime<Utc>,
}

/// Rows written in one statement.
const CHUNK: usize = 200;

impl Store {
    /// At most `limit` answers filed under `model` and `prompt_version`, newest first.
    pub async fn model_cache_load(
        &self,
        model: &str,
        prompt_version: &str,
        limit: u64,
    ) -> Result<Vec<CachedAnswer>, StoreError> {
        model_cache::Entity::find()
            .filter(model_cache::Column::Model.eq(model))
            .filter(model_cache::Column::PromptVersion.eq(prompt_version))
            .order_by_desc(model_cache::Column::Id)
            .limit(limit)
            .rows(&self.db, |row| CachedAnswer {
                key: row.cache_key,
                model: row.model,
                prompt_version: row.prompt_version,
                claims: row.claims,
                created_at: row.created_at,
            })
            .await
    }

    /// Stores `answers` (a key already stored keeps its row), then evicts the oldest rows of
    /// each model written beyond `keep`; one transaction. Returns the rows evicted.
    pub async fn model_cache_put(
        &self,
        answers: &[CachedAnswer],
        keep: u64,
    ) -> Result<u64, StoreError> {
        if answers.is_empty() {
            return Ok(0);
        }
        let txn = self.writer.begin().await?;
        let batch = Batch {
            chunk: CHUNK,
            key: &[model_cache::Column::CacheKey],
            update: &[],
        };
        batch
            .write(&txn, answers, |a| model_cache::ActiveModel {
                cache_key: Set(a.key.clone()),
                model: Set(a.model.clone()),
                prompt_version: Set(a.prompt_version.clone()),
                claims: Set(a.claims.clone()),
                created_at: Set(a.created_at),
                ..Default::default()
            })
            .await?;
        let mut models: Vec<&str> = answers.iter().map(|a| a.model.as_str()).collect();
        models.sort_unstable();
        models.dedup();
        let mut evicted = 0;
        for model in models {
            evicted += evict_beyond::<model_cache::Entity>(
                &txn,
                model_cache::Column::Model,
                model,
                model_cache::Column::Id,
                keep,
            )
            .await?;
        }
        txn.commit().await?;
        Ok(evicted)
    }

    /// Answers stored for `model`, every prompt version.
    pub async fn model_cache_len(&self, model: &str) -> Result<u64, StoreError> {
        Ok(model_cache::Entity::find()
            .filter(model_cache::Column::Model.eq(model))
            .count(&self.db)
            .await?)
    }
}
