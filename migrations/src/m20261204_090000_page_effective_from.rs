//! `effective_from` on `page_version`: when a version announced ahead of its time (a page
//! published today for next month) takes effect. Until then the version before it stays the
//! page's current text and its facts hold; `as_of` reads effective time. Null: at once, at
//! `updated_at` (every row from before).

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
                    .add_column(timestamp_with_time_zone_null(PageVersion::EffectiveFrom))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(PageVersion::Table)
                    .drop_column(PageVersion::EffectiveFrom)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum PageVersion {
    Table,
    EffectiveFrom,
}
