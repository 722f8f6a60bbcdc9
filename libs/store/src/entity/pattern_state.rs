//! Rows of `pattern_state`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "pattern_state")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub kind: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub key: String,
    pub status: String,
    pub action: String,
    pub signal_to_heal_ms: Option<i64>,
    pub updated_at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
