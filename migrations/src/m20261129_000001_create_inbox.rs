//! The analyst's inbox: every queue message it has taken responsibility for, keyed by queue and
//! message id so a redelivered message is recorded once.

use sea_orm_migration::prelude::*;

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .create_table(
                Table::create()
                    .table(InboxMessage::Table)
                    .if_not_exists()
                    .col(
                        ColumnDef::new(InboxMessage::Id)
                            .big_integer()
                            .not_null()
                            .auto_increment()
                            .primary_key(),
                    )
                    .col(ColumnDef::new(InboxMessage::Queue).string().not_null())
                    .col(ColumnDef::new(InboxMessage::MessageId).string().not_null())
                    .col(ColumnDef::new(InboxMessage::Body).text().not_null())
                    .col(
                        ColumnDef::new(InboxMessage::ReceivedAt)
                            .timestamp_with_time_zone()
                            .not_null(),
                    )
                    .to_owned(),
            )
            .await?;
        manager
            .create_index(
                Index::create()
                    .name("ux_inbox_message_queue_message_id")
                    .table(InboxMessage::Table)
                    .col(InboxMessage::Queue)
                    .col(InboxMessage::MessageId)
                    .unique()
                    .if_not_exists()
                    .to_owned(),
            )
            .await
    }

    async fn down(&self, manager: &SchemaManager) -> Result<(), DbErr> {
        manager
            .drop_table(
                Table::drop()
                    .table(InboxMessage::Table)
                    .if_exists()
                    .to_owned(),
            )
            .await
    }
}

#[derive(DeriveIden)]
enum InboxMessage {
    Table,
    Id,
    Queue,
    MessageId,
    Body,
    ReceivedAt,
}
