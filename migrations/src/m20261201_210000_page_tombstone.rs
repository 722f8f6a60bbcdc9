//! `deleted` on `page_version`: a version that records the page's deletion (`doc.delete`, or a
//! `source.listing` that no longer names it). A tombstone has no body; the facts read from the
//! page end at its time, and answers, passages and the firewall stop citing the page. Rows from
//! before are live versions (false).

use sea_orm_migration::prelude::*;
use sea_orm_migration::schema::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PageVersion::Table)
                    .add_column(boolean(PageVersion::Deleted).default(false))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PageVersion::Table)
                    .drop_column(PageVersion::Deleted)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum PageVersion {
    Table,
    Deleted,
}
