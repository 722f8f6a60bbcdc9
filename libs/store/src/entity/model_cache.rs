//! Rows of `model_cache`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "model_cache")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub cache_key: String,
    pub model: String,
    pub prompt_version: String,
    #[sea_orm(column_type = "Text")]
    pub claims: String,
    pub created_at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
