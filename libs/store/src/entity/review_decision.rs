//! Rows of `review_decision`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "review_decision")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub tenant: String,
    pub update_id: String,
    pub decision: String,
    pub reviewer: String,
    #[sea_orm(column_type = "Text")]
    pub new_value: String,
    #[sea_orm(column_type = "Text")]
    pub note: String,
    pub decided_at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
