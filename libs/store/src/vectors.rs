//! The sentence encoder's vectors kept across restarts (`text_vector`): one row per text
//! encoded, keyed by the key the encoder computes (`ontoloop_core::knowledge::encoder::vector_key`,
//! the hex SHA-256 of the model's id and the text; the text is not kept), the vector as
//! little-endian `f32`s. The store keeps the rows and their bound; when to read or write them is
//! the encoder's business (`ontoloop-runtime` wires it).
//!
//! Bounded: [`Store::text_vectors_evict`] keeps the newest `keep` rows of a model.
//!
//! Rows are not per tenant: two tenants share a vector only for the very same text, which tells
//! neither anything its own text does not, and no caller can read a vector.
//!
//! Lookups may come from a thread that cannot wait on the process's runtime (an encoder called
//! while a request is served): [`VectorReader`] is a pool of its own, driven by the thread that
//! made it.

use std::collections::HashMap;

use sea_orm::{
    ColumnTrait, ConnectionTrait, Database, DatabaseConnection, DbBackend, EntityTrait,
    PaginatorTrait, QueryFilter, Set, TransactionTrait,
};

use crate::entity::text_vector;
use crate::rows::{Batch, evict_beyond};
use crate::{Store, StoreError};
use ontoloop_settings::StoreSettings;

/// Rows written in one statement (a vector row carries about 1.5 KB).
const CHUNK: usize = 100;

/// Keys looked up in one statement.
const LOOKUP: usize = 500;

/// A vector as stored: little-endian `f32`s.
fn to_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// A stored vector; `None` for a row whose length is not whole `f32`s.
fn from_bytes(bytes: &[u8]) -> Option<Vec<f32>> {
    (bytes.len().is_multiple_of(4) && !bytes.is_empty()).then(|| {
        bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect()
    })
}

/// The vectors of `keys` held in `db`, by key; a key without a row, or with an unreadable one,
/// is absent.
async fn find(
    db: &impl ConnectionTrait,
    keys: &[String],
) -> Result<HashMap<String, Vec<f32>>, StoreError> {
    let mut found = HashMap::new();
    for part in keys.chunks(LOOKUP) {
        let rows = text_vector::Entity::find()
            .filter(text_vector::Column::VectorKey.is_in(part.iter().cloned()))
            .all(db)
            .await?;
        for row in rows {
            if let Some(vector) = from_bytes(&row.vector) {
                found.insert(row.vector_key, vector);
            }
        }
    }
    Ok(found)
}

impl Store {
    /// The vectors kept under `keys`, by key.
    pub async fn text_vectors_find(
        &self,
        keys: &[String],
    ) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        find(&self.db, keys).await
    }

    /// Keeps `vectors` (key, vector) of `model`; a key already kept keeps its row. One
    /// transaction.
    pub async fn text_vectors_put(
        &self,
        model: &str,
        vectors: &[(String, Vec<f32>)],
    ) -> Result<(), StoreError> {
        if vectors.is_empty() {
            return Ok(());
        }
        let txn = self.writer.begin().await?;
        let batch = Batch {
            chunk: CHUNK,
            key: &[text_vector::Column::VectorKey],
            update: &[],
        };
        batch
            .write(&txn, vectors, |(key, vector)| text_vector::ActiveModel {
                vector_key: Set(key.clone()),
                model: Set(model.to_owned()),
                vector: Set(to_bytes(vector)),
                ..Default::default()
            })
            .await?;
        txn.commit().await?;
        Ok(())
    }

    /// Evicts the oldest vectors of `model` beyond the newest `keep`; returns how many went.
    pub async fn text_vectors_evict(&self, model: &str, keep: u64) -> Result<u64, StoreError> {
        let txn = self.writer.begin().await?;
        let evicted = evict_beyond::<text_vector::Entity>(
            &txn,
            text_vector::Column::Model,
            model,
            text_vector::Column::Id,
            keep,
        )
        .await?;
        txn.commit().await?;
        Ok(evicted)
    }

    /// Vectors kept for `model`.
    pub async fn text_vectors_len(&self, model: &str) -> Result<u64, StoreError> {
        Ok(text_vector::Entity::find()
            .filter(text_vector::Column::Model.eq(model))
            .count(&self.db)
            .await?)
    }
}

/// A small read pool of its own for vector lookups, for a thread that drives it with a runtime
/// of its own (see the module's header). It only reads.
pub struct VectorReader {
    db: DatabaseConnection,
}

impl VectorReader {
    /// Connections the reader holds.
    const CONNECTIONS: u32 = 2;

    /// Connects to the store `settings` name, once (the caller retries or goes without). `None`
    /// for a SQLite database in memory, which another pool would not see.
    pub async fn connect(settings: &StoreSettings) -> Result<Option<Self>, StoreError> {
        let url = settings.url.to_ascii_lowercase();
        if url.starts_with("sqlite") && (url.contains(":memory:") || url.contains("mode=memory")) {
            return Ok(None);
        }
        let options =
            crate::connect_options(settings, Self::CONNECTIONS, settings.connect_timeout_ms);
        let db = Database::connect(options).await?;
        if db.get_database_backend() == DbBackend::Sqlite {
            crate::tune_sqlite(&db).await?;
        }
        Ok(Some(Self { db }))
    }

    /// The vectors kept under `keys`, by key.
    pub async fn find(&self, keys: &[String]) -> Result<HashMap<String, Vec<f32>>, StoreError> {
        find(&self.db, keys).await
    }
}

#[cfg(test)]
mod tests {
    use super::{from_bytes, to_bytes};

    #[test]
    fn a_vector_comes_back_as_it_was_kept_and_a_torn_row_not_at_all() {
        let vector = vec![0.25, -1.5, f32::MIN_POSITIVE, 3.0e7];
        assert_eq!(from_bytes(&to_bytes(&vector)), Some(vector));
        assert_eq!(from_bytes(&[1, 2, 3]), None);
        assert_eq!(from_bytes(&[]), None);
    }
}
