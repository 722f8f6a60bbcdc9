//! Lists of rows: a query's rows read, each converted to the domain value a caller gets back
//! ([`Rows`]), and values written as rows a chunk at a time ([`Batch`]).

use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, Insert, QueryFilter, QueryOrder,
    QuerySelect, Select,
};

use crate::StoreError;

/// `query.rows(db, convert)`: every row of a select, converted (the store's lists all read so).
pub(crate) trait Rows<E: EntityTrait> {
    /// Runs the query on `db` and converts each row with `convert`, in the query's order.
    async fn rows<T>(
        self,
        db: &impl ConnectionTrait,
        convert: impl FnMut(E::Model) -> T,
    ) -> Result<Vec<T>, StoreError>;
}

impl<E: EntityTrait> Rows<E> for Select<E> {
    async fn rows<T>(
        self,
        db: &impl ConnectionTrait,
        convert: impl FnMut(E::Model) -> T,
    ) -> Result<Vec<T>, StoreError> {
        Ok(self.all(db).await?.into_iter().map(convert).collect())
    }
}

/// A column of the table `A` writes.
pub(crate) type Column<A> = <<A as ActiveModelTrait>::Entity as EntityTrait>::Column;

/// How values are written as rows of one table: `chunk` rows a statement (a statement holds only
/// so many parameters); a row whose `key` columns match a stored row's updates that row's
/// `update` columns instead, or leaves it as it is when `update` is empty; with no `key`, every
/// row is inserted.
pub(crate) struct Batch<'a, A: ActiveModelTrait> {
    /// Rows a statement writes at most.
    pub chunk: usize,
    /// The columns that find a stored row; none: insert every row.
    pub key: &'a [Column<A>],
    /// The columns a stored row takes from the new one; none: keep the stored row.
    pub update: &'a [Column<A>],
}

impl<A: ActiveModelTrait> Batch<'_, A> {
    /// Writes `items` as rows, `row` making each.
    pub async fn write<T>(
        &self,
        db: &impl ConnectionTrait,
        items: &[T],
        mut row: impl FnMut(&T) -> A,
    ) -> Result<(), StoreError> {
        for part in items.chunks(self.chunk) {
            let insert = Insert::many(part.iter().map(&mut row));
            if self.key.is_empty() {
                insert.exec_without_returning(db).await?;
                continue;
            }
            let mut conflict = OnConflict::columns(self.key.iter().copied());
            if self.update.is_empty() {
                conflict.do_nothing();
            } else {
                conflict.update_columns(self.update.iter().copied());
            }
            insert
                .on_conflict(conflict)
                .exec_without_returning(db)
                .await?;
        }
        Ok(())
    }
}

/// Deletes the rows of table `E` whose `owner` column holds `value`, beyond the newest `keep`
/// of them by the ascending `id` column (a bounded cache's eviction); returns how many went.
pub(crate) async fn evict_beyond<E: EntityTrait>(
    db: &impl ConnectionTrait,
    owner: E::Column,
    value: &str,
    id: E::Column,
    keep: u64,
) -> Result<u64, StoreError> {
    // The newest row beyond the bound; it and everything older go.
    let beyond: Option<i64> = E::find()
        .select_only()
        .column(id)
        .filter(owner.eq(value))
        .order_by_desc(id)
        .offset(keep)
        .limit(1)
        .into_tuple()
        .one(db)
        .await?;
    let Some(beyond) = beyond else {
        return Ok(0);
    };
    Ok(E::delete_many()
        .filter(owner.eq(value))
        .filter(id.lte(beyond))
        .exec(db)
        .await?
        .rows_affected)
}
