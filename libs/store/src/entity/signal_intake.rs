//! Rows of `signal_intake`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "signal_intake")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub idempotency_key: String,
    pub signal_type: String,
    pub subject: String,
    pub agent_id: String,
    #[sea_orm(column_type = "Text")]
    pub query: String,
    pub received_at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
