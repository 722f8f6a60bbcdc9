//! The knowledge tables: the intake log (sequence numbers), immutable page versions, the
//! extraction log, entities, facts with provenance, per-tenant state (ontology and knowledge
//! version) and maintenance runs with their cost.

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
                    .table(TenantState::Table)
                    .if_not_exists()
                    .col(string(TenantState::Tenant).primary_key())
                    .col(text_null(TenantState::Ontology))
                    .col(big_integer(TenantState::KnowledgeVersion))
                    .col(timestamp_with_time_zone(TenantState::UpdatedAt))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(IntakeEvent::Table)
                    .if_not_exists()
                    .col(big_pk_auto(IntakeEvent::Seq))
                    .col(string(IntakeEvent::Tenant))
                    .col(string_null(IntakeEvent::IdempotencyKey))
                    .col(string(IntakeEvent::Kind))
                    .col(text(IntakeEvent::Body))
                    .col(timestamp_with_time_zone(IntakeEvent::ReceivedAt))
                    .col(string(IntakeEvent::State))
                    .col(text_null(IntakeEvent::Detail))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_intake_event_tenant_key")
                    .table(IntakeEvent::Table)
                    .col(IntakeEvent::Tenant)
                    .col(IntakeEvent::IdempotencyKey)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(PageVersion::Table)
                    .if_not_exists()
                    .col(big_pk_auto(PageVersion::Id))
                    .col(string(PageVersion::Tenant))
                    .col(string(PageVersion::DocId))
                    .col(big_integer(PageVersion::Version))
                    .col(text(PageVersion::Title))
                    .col(string(PageVersion::Origin))
                    .col(text(PageVersion::Body))
                    .col(string(PageVersion::ContentHash))
                    .col(timestamp_with_time_zone(PageVersion::UpdatedAt))
                    .col(text(PageVersion::Acl))
                    .col(double(PageVersion::Confidence))
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_page_version_tenant_doc_version")
                    .table(PageVersion::Table)
                    .col(PageVersion::Tenant)
                    .col(PageVersion::DocId)
                    .col(PageVersion::Version)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(ExtractionLog::Table)
                    .if_not_exists()
                    .col(string(ExtractionLog::Tenant))
                    .col(string(ExtractionLog::DocId))
                    .col(big_integer(ExtractionLog::Version))
                    .col(timestamp_with_time_zone(ExtractionLog::ExtractedAt))
                    .primary_key(
                        Index::create()
                            .col(ExtractionLog::Tenant)
                            .col(ExtractionLog::DocId),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Entity::Table)
                    .if_not_exists()
                    .col(string(Entity::Tenant))
                    .col(string(Entity::Id))
                    .col(text(Entity::Name))
                    .col(string_null(Entity::EntityType))
                    .col(text(Entity::Aliases))
                    .primary_key(Index::create().col(Entity::Tenant).col(Entity::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(Fact::Table)
                    .if_not_exists()
                    .col(string(Fact::Tenant))
                    .col(big_integer(Fact::Id))
                    .col(string(Fact::Entity))
                    .col(string(Fact::Predicate))
                    .col(text(Fact::Object))
                    .col(string(Fact::SourceId))
                    .col(big_integer(Fact::SourceVersion))
                    .col(big_integer(Fact::SeenVersion))
                    .col(string(Fact::Origin))
                    .col(integer(Fact::Authority))
                    .col(timestamp_with_time_zone(Fact::ExtractedAt))
                    .col(timestamp_with_time_zone(Fact::ValidFrom))
                    .col(timestamp_with_time_zone_null(Fact::ValidTo))
                    .col(string(Fact::Extractor))
                    .col(double(Fact::Confidence))
                    .col(text(Fact::Acl))
                    .primary_key(Index::create().col(Fact::Tenant).col(Fact::Id))
                    .to_owned(),
            )
            .await?;
        manager
            .create_table(
                Table::create()
                    .table(MaintenanceRun::Table)
                    .if_not_exists()
                    .col(big_pk_auto(MaintenanceRun::Id))
                    .col(string(MaintenanceRun::Tenant))
                    .col(big_integer(MaintenanceRun::Seq))
                    .col(string(MaintenanceRun::Mode))
                    .col(big_integer(MaintenanceRun::PagesRead))
                    .col(big_integer(MaintenanceRun::PagesTotal))
                    .col(big_integer(MaintenanceRun::EstTokens))
                    .col(big_integer(MaintenanceRun::GraphWrites))
                    .col(timestamp_with_time_zone(MaintenanceRun::At))
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        for table in [
            MaintenanceRun::Table.into_iden(),
            Fact::Table.into_iden(),
            Entity::Table.into_iden(),
            ExtractionLog::Table.into_iden(),
            PageVersion::Table.into_iden(),
            IntakeEvent::Table.into_iden(),
            TenantState::Table.into_iden(),
        ] {
            manager
                .drop_table(Table::drop().table(table).if_exists().to_owned())
                .await?;
        }
        Ok(())
    }
}

#[derive(DeriveIden)]
enum TenantState {
    Table,
    Tenant,
    Ontology,
    KnowledgeVersion,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum IntakeEvent {
    Table,
    Seq,
    Tenant,
    IdempotencyKey,
    Kind,
    Body,
    ReceivedAt,
    State,
    Detail,
}

#[derive(DeriveIden)]
enum PageVersion {
    Table,
    Id,
    Tenant,
    DocId,
    Version,
    Title,
    Origin,
    Body,
    ContentHash,
    UpdatedAt,
    Acl,
    Confidence,
}

#[derive(DeriveIden)]
enum ExtractionLog {
    Table,
    Tenant,
    DocId,
    Version,
    ExtractedAt,
}

#[derive(DeriveIden)]
#[sea_orm(iden = "entity")]
#[allow(clippy::enum_variant_names)]
enum Entity {
    Table,
    Tenant,
    Id,
    Name,
    EntityType,
    Aliases,
}

#[derive(DeriveIden)]
enum Fact {
    Table,
    Tenant,
    Id,
    Entity,
    Predicate,
    Object,
    SourceId,
    SourceVersion,
    SeenVersion,
    Origin,
    Authority,
    ExtractedAt,
    ValidFrom,
    ValidTo,
    Extractor,
    Confidence,
    Acl,
}

#[derive(DeriveIden)]
enum MaintenanceRun {
    Table,
    Id,
    Tenant,
    Seq,
    Mode,
    PagesRead,
    PagesTotal,
    EstTokens,
    GraphWrites,
    At,
}
