//! Rows of `work_item`.

use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "work_item")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub tenant: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(column_type = "Text")]
    pub title: String,
    pub assignee: Option<String>,
    pub service: Option<String>,
    pub severity: String,
    pub scope: String,
    pub source: String,
    pub created_at: ChronoDateTimeUtc,
    #[sea_orm(column_type = "Text")]
    pub acl: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
