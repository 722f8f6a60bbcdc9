//! The organisation tables: HR records (people and teams), product facts by documentation file,
//! work items with their ACL, and per tenant an org version with the log of changes behind it,
//! so readers of the ephemeral org and product graphs know when and how to bring them up to date.

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
                    .table(OrgState::Table)
                    .if_not_exists()
                    .col(string(OrgState::Tenant).primary_key())
                    .col(big_integer(OrgState::Version))
                    .col(timestamp_with_time_zone(OrgState::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OrgChange::Table)
                    .if_not_exists()
                    .col(string(OrgChange::Tenant))
                    .col(big_integer(OrgChange::Version))
                    .col(string(OrgChange::Kind))
                    .col(text(OrgChange::Body))
                    .col(timestamp_with_time_zone(OrgChange::At))
                    .primary_key(
                        Index::create()
                            .col(OrgChange::Tenant)
                            .col(OrgChange::Version),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OrgPerson::Table)
                    .if_not_exists()
                    .col(string(OrgPerson::Tenant))
                    .col(string(OrgPerson::Id))
                    .col(text(OrgPerson::Name))
                    .col(string(OrgPerson::Team))
                    .col(string(OrgPerson::Role))
                    .col(string_null(OrgPerson::Manager))
                    .primary_key(Index::create().col(OrgPerson::Tenant).col(OrgPerson::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(OrgTeam::Table)
                    .if_not_exists()
                    .col(string(OrgTeam::Tenant))
                    .col(string(OrgTeam::Id))
                    .col(text(OrgTeam::Name))
                    .col(string_null(OrgTeam::Parent))
                    .primary_key(Index::create().col(OrgTeam::Tenant).col(OrgTeam::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ProductFact::Table)
                    .if_not_exists()
                    .col(big_pk_auto(ProductFact::Id))
                    .col(string(ProductFact::Tenant))
                    .col(string(ProductFact::File))
                    .col(integer(ProductFact::Position))
                    .col(string(ProductFact::Subject))
                    .col(string(ProductFact::Predicate))
                    .col(text(ProductFact::Object))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ix_product_fact_tenant_file")
                    .table(ProductFact::Table)
                    .col(ProductFact::Tenant)
                    .col(ProductFact::File)
                    .col(ProductFact::Position)
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(WorkItem::Table)
                    .if_not_exists()
                    .col(string(WorkItem::Tenant))
                    .col(string(WorkItem::Id))
                    .col(text(WorkItem::Title))
                    .col(string_null(WorkItem::Assignee))
                    .col(string_null(WorkItem::Service))
                    .col(string(WorkItem::Severity))
                    .col(string(WorkItem::Scope))
                    .col(string(WorkItem::Source))
                    .col(timestamp_with_time_zone(WorkItem::CreatedAt))
                    .col(text(WorkItem::Acl))
                    .primary_key(Index::create().col(WorkItem::Tenant).col(WorkItem::Id))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            WorkItem::Table.into_iden(),
            ProductFact::Table.into_iden(),
            OrgTeam::Table.into_iden(),
            OrgPerson::Table.into_iden(),
            OrgChange::Table.into_iden(),
            OrgState::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum OrgState {
    Table,
    Tenant,
    Version,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum OrgChange {
    Table,
    Tenant,
    Version,
    Kind,
    Body,
    At,
}

#[derive(DeriveIden)]
enum OrgPerson {
    Table,
    Tenant,
    Id,
    Name,
    Team,
    Role,
    Manager,
}

#[derive(DeriveIden)]
enum OrgTeam {
    Table,
    Tenant,
    Id,
    Name,
    Parent,
}

#[derive(DeriveIden)]
enum ProductFact {
    Table,
    Id,
    Tenant,
    File,
    Position,
    Subject,
    Predicate,
    Object,
}

#[derive(DeriveIden)]
enum WorkItem {
    Table,
    Tenant,
    Id,
    Title,
    Assignee,
    Service,
    Severity,
    Scope,
    Source,
    CreatedAt,
    Acl,
}
