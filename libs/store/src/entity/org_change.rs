//! Rows of `org_change`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "org_change")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub version: i64,
    pub kind: String,
    #[sea_orm(column_type = "Text")]
    pub body: String,
    pub at: ChronoDateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
