//! `scope` on `fact`: where the value holds, as `key=value` pairs joined by `, ` (`region=EU`),
//! read from the sentence's own scoping phrase or a record event's scope. Rows from before hold
//! everywhere (the empty text).

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
                    .table(Fact::Table)
                    .add_column(text(Fact::Scope).default(""))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .alter_table(
                Table::alter()
                    .table(Fact::Table)
                    .drop_column(Fact::Scope)
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum Fact {
    Table,
    Scope,
}
