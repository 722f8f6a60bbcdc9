//! Rows of `inbox_message`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "inbox_message")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub queue: String,
    pub message_id: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub received_at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
