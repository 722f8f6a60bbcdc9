//! What lets a reader bring its read model from one knowledge version to a later one without
//! loading the tenant again (`Store::knowledge_changes_since`):
//!
//! - `changed_in` on `page_version`, `entity`, `fact` and `extraction_log`: the knowledge
//!   version whose commit last wrote the row, with an index (tenant, changed_in) each for the
//!   "rows of this tenant written after version V" read. Rows written before this migration are
//!   0: a reader that held an older model loads the tenant whole.
//! - `knowledge_commit`: one row per committed version (tenant, version), with what the rows
//!   cannot say: whether the commit replaced the ontology (a reader then loads whole) and which
//!   entities it removed (merged away). A reader finding a version in its range without its row
//!   loads whole, so commits made by an older writer are never half-read.

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The tables that get `changed_in`, and the index on (tenant, changed_in) of each.
fn tables() -> Vec<(DynIden, &'static str)> {
    vec![
        (PageVersion::Table.into_iden(), "ix_page_version_changed"),
        (Entity::Table.into_iden(), "ix_entity_changed"),
        (Fact::Table.into_iden(), "ix_fact_changed"),
        (
            ExtractionLog::Table.into_iden(),
            "ix_extraction_log_changed",
        ),
    ]
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for (table, index) in tables() {
            // SQLite adds one column per ALTER TABLE.
            manager
                .alter_table(
                    Table::alter()
                        .table(table.clone())
                        .add_column(big_integer(Changes::ChangedIn).default(0))
                        .to_owned(),
                )
                .await?;
            manager
                .create_index(
                    Index::create()
                        .name(index)
                        .table(table)
                        .col(Changes::Tenant)
                        .col(Changes::ChangedIn)
                        .to_owned(),
                )
                .await?;
        }
        manager
            .create_table(
                Table::create()
                    .table(KnowledgeCommit::Table)
                    .if_not_exists()
                    .col(string(KnowledgeCommit::Tenant))
                    .col(big_integer(KnowledgeCommit::Version))
                    .col(boolean(KnowledgeCommit::OntologyChanged))
                    .col(text(KnowledgeCommit::RemovedEntities))
                    .primary_key(
                        Index::create()
                            .col(KnowledgeCommit::Tenant)
                            .col(KnowledgeCommit::Version),
                    )
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(Table::drop().table(KnowledgeCommit::Table).to_owned())
            .await?;
        for (table, index) in tables().into_iter().rev() {
            manager
                .drop_index(Index::drop().name(index).table(table.clone()).to_owned())
                .await?;
            manager
                .alter_table(
                    Table::alter()
                        .table(table)
                        .drop_column(Changes::ChangedIn)
                        .to_owned(),
                )
                .await?;
        }
        Ok(())
    }
}

/// The columns every changed table shares.
#[derive(DeriveIden)]
enum Changes {
    Tenant,
    ChangedIn,
}

#[derive(DeriveIden)]
enum PageVersion {
    Table,
}

#[derive(DeriveIden)]
enum Entity {
    Table,
}

#[derive(DeriveIden)]
enum Fact {
    Table,
}

#[derive(DeriveIden)]
enum ExtractionLog {
    Table,
}

#[derive(DeriveIden)]
enum KnowledgeCommit {
    Table,
    Tenant,
    Version,
    OntologyChanged,
    RemovedEntities,
}
