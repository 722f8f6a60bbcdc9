//! `text_vector`: the sentence encoder's vectors kept across restarts, one row per text encoded,
//! keyed by the hex SHA-256 of the model's id and the text (the text itself is not kept), with
//! the vector as little-endian `f32`s; bounded per model by the store, oldest rows evicted.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(TextVector::Table)
                    .if_not_exists()
                    .col(big_pk_auto(TextVector::Id))
                    .col(string(TextVector::VectorKey))
                    .col(string(TextVector::Model))
                    .col(blob(TextVector::Vector))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_text_vector_key")
                    .table(TextVector::Table)
                    .col(TextVector::VectorKey)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_text_vector_model_id")
                    .table(TextVector::Table)
                    .col(TextVector::Model)
                    .col(TextVector::Id)
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(TextVector::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum TextVector {
    Table,
    Id,
    VectorKey,
    Model,
    Vector,
}
