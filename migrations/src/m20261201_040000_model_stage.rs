//! The extraction pipeline's `model` stage: its answers cached across restarts (`model_cache`,
//! one row per sentence asked, keyed by the hex sha256 of model, prompt version, prompt and
//! schema — which fingerprint the ontology — and the sentence; bounded per model by the store,
//! oldest rows evicted), and what the stage did in each maintenance run (new `maintenance_run`
//! columns, zero for runs recorded before).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The `maintenance_run` columns this migration adds, each a count that starts at 0.
const RUN_COLUMNS: [MaintenanceRun; 8] = [
    MaintenanceRun::ModelRequests,
    MaintenanceRun::ModelSentences,
    MaintenanceRun::ModelCacheHits,
    MaintenanceRun::ModelPromptTokens,
    MaintenanceRun::ModelCompletionTokens,
    MaintenanceRun::ModelTokens,
    MaintenanceRun::ModelDropped,
    MaintenanceRun::ModelErrors,
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(ModelCache::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ModelCache::Id))
                    .col(string(ModelCache::CacheKey))
                    .col(string(ModelCache::Model))
                    .col(string(ModelCache::PromptVersion))
                    .col(text(ModelCache::Claims))
                    .col(timestamp_with_time_zone(ModelCache::CreatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_model_cache_key")
                    .table(ModelCache::Table)
                    .col(ModelCache::CacheKey)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_model_cache_model_id")
                    .table(ModelCache::Table)
                    .col(ModelCache::Model)
                    .col(ModelCache::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        // One column per statement: SQLite alters one at a time.
        for column in RUN_COLUMNS {
            manager
                .alter_table(
                    Table::alter()
                        .table(MaintenanceRun::Table)
                        .add_column(big_integer(column).default(0))
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for column in RUN_COLUMNS {
            manager
                .alter_table(
                    Table::alter()
                        .table(MaintenanceRun::Table)
                        .drop_column(column)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .drop_table(
                Table::drop()
                    .table(ModelCache::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum ModelCache {
    Table,
    Id,
    CacheKey,
    Model,
    PromptVersion,
    Claims,
    CreatedAt,
}

#[derive(DeriveIden, Clone, Copy)]
enum MaintenanceRun {
    Table,
    ModelRequests,
    ModelSentences,
    ModelCacheHits,
    ModelPromptTokens,
    ModelCompletionTokens,
    ModelTokens,
    ModelDropped,
    ModelErrors,
}
