//! Persistent knowledge: the intake log, page versions, the extraction log, entities, facts,
//! per-tenant state and maintenance runs (with what the extraction pipeline's `model` stage did
//! in each: requests, sentences sent, cache hits, tokens, failed calls, triples dropped by
//! grounding; the rest of `ModelUsage` is not stored and reads as 0). The analyst commits each
//! step in one transaction, guarded by the tenant's knowledge version so two writers can never
//! interleave.
//!
//! The intake log (appending, reading and settling events) is [`intake`].

mod intake;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use ontoloop_core::knowledge::{
    Entity, Fact, MaintenanceReport, ModelCost, ModelUsage, PageVersion, Scope, SourceRef,
};
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set, TransactionTrait};

use crate::entity::{
    entity_row, extraction_log, fact, knowledge_commit, maintenance_run, page_version, tenant_state,
};
use crate::rows::{Batch, Rows};
use crate::{Store, StoreError};

/// Rows one statement writes at most.
const CHUNK: usize = 200;

pub(crate) use intake::settle_in;
pub use intake::{Intake, IntakeRequest, IntakeSummary, PAGE_KINDS, Settled, intake_state};

/// A tenant's stored knowledge, as loaded by the analyst and retrieval.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeRows {
    /// The tenant's ontology document, if one was set.
    pub ontology: Option<String>,
    /// Knowledge version (0 for a tenant with nothing yet).
    pub version: i64,
    /// Every page version, oldest first per page.
    pub pages: Vec<PageVersion>,
    /// Extraction log: page id to the version the graph last read.
    pub extraction_log: BTreeMap<String, u64>,
    /// Entities.
    pub entities: Vec<Entity>,
    /// Facts, current and superseded.
    pub facts: Vec<Fact>,
}

/// What changed in a tenant's knowledge between two versions
/// ([`Store::knowledge_changes_since`]): the rows the commits in between wrote, as they are at
/// `version`.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeChanges {
    /// The version they bring a reader to.
    pub version: i64,
    /// New page versions, oldest first per page.
    pub pages: Vec<PageVersion>,
    /// Extraction log entries written.
    pub extraction_log: Vec<(String, u64)>,
    /// Entities inserted or replaced.
    pub entities: Vec<Entity>,
    /// Entities merged away.
    pub removed_entities: Vec<String>,
    /// Facts inserted or replaced (new ones, superseded ones, renamed ones).
    pub facts: Vec<Fact>,
}

/// One maintenance run to record.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Intake sequence number that caused it.
    pub seq: i64,
    /// Mode name.
    pub mode: String,
    /// Its cost.
    pub report: MaintenanceReport,
    /// When it ran.
    pub at: DateTime<Utc>,
}

/// A stored maintenance run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRun {
    /// Intake sequence number that caused it.
    pub seq: i64,
    /// Mode name.
    pub mode: String,
    /// Its cost.
    pub report: MaintenanceReport,
}

/// Everything one analyst step writes, committed atomically.
#[derive(Debug, Clone, Default)]
pub struct KnowledgeCommit {
    /// Replaces the tenant's ontology.
    pub ontology: Option<String>,
    /// New page versions.
    pub pages: Vec<PageVersion>,
    /// Entities to insert or replace.
    pub entities: Vec<Entity>,
    /// Entities merged away.
    pub removed_entities: Vec<String>,
    /// Facts to insert or replace.
    pub facts: Vec<Fact>,
    /// Extraction log entries: page, version read, when.
    pub extraction_log: Vec<(String, u64, DateTime<Utc>)>,
    /// Maintenance runs.
    pub runs: Vec<RunRecord>,
    /// Intake events settled by this step: sequence, and the failure reason if refused.
    pub settled: Vec<(i64, Option<String>)>,
    /// The queue messages this commit processed (queue, message id, body), recorded in the inbox
    /// in the same transaction so a redelivered message is recognised and has no second effect.
    pub messages: Vec<(String, String, String)>,
    /// What the gate records of this step: a change it judged (held or live), or one moved on
    /// (approved, rolled back); in the same transaction, so a change is never applied without
    /// its record nor recorded without being applied.
    pub gate: Option<crate::gate::GateWrite>,
}

impl Store {
    /// The tenant's knowledge version (0 when it has none).
    pub async fn knowledge_version(&self, tenant: &str) -> Result<i64, StoreError> {
        self.refuse_while_away()?;
        let read = tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&self.db)
            .await;
        Ok(self.noted(read)?.map_or(0, |row| row.knowledge_version))
    }

    /// The knowledge version of each of `tenants` (0 for one that never committed), read a few
    /// hundred tenants a statement.
    pub async fn knowledge_versions(
        &self,
        tenants: &[String],
    ) -> Result<HashMap<String, i64>, StoreError> {
        let mut versions: HashMap<String, i64> =
            tenants.iter().map(|tenant| (tenant.clone(), 0)).collect();
        for some in tenants.chunks(500) {
            let rows = tenant_state::Entity::find()
                .filter(tenant_state::Column::Tenant.is_in(some.iter().cloned()))
                .all(&self.db)
                .await?;
            for row in rows {
                versions.insert(row.tenant, row.knowledge_version);
            }
        }
        Ok(versions)
    }

    /// A tenant's whole knowledge, read in one transaction: every row of one knowledge version,
    /// never a commit half-seen.
    pub async fn load_knowledge(&self, tenant: &str) -> Result<KnowledgeRows, StoreError> {
        let txn = self.begin_read().await?;
        let state = tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&txn)
            .await?;
        let pages = page_rows(&txn, tenant, None).await?;
        let other = other_rows(&txn, tenant, None).await?;
        txn.commit().await?;
        Ok(KnowledgeRows {
            ontology: state.as_ref().and_then(|s| s.ontology.clone()),
            version: state.map_or(0, |s| s.knowledge_version),
            pages,
            extraction_log: other.extraction_log.into_iter().collect(),
            entities: other.entities,
            facts: other.facts,
        })
    }

    /// What changed in a tenant's knowledge after version `since`, read in one transaction:
    /// `None` when a reader must load the tenant whole instead — a commit in the range replaced
    /// the ontology, or a version in it has no `knowledge_commit` row (written before versions
    /// were kept, or pruned) — and an empty change set at `since` itself.
    pub async fn knowledge_changes_since(
        &self,
        tenant: &str,
        since: i64,
    ) -> Result<Option<KnowledgeChanges>, StoreError> {
        let changes = self
            .knowledge_changes_since_with(tenant, since, |pages| async { (pages, ()) })
            .await?;
        Ok(changes.map(|(changes, ())| changes))
    }

    /// [`Store::knowledge_changes_since`], handing the changed pages to `with_pages` as soon as
    /// they are read: its future runs while the rest (entities, facts) is read in the same
    /// transaction, and gives the pages back with what it made of them. A read model indexes
    /// the pages of a long range meanwhile (at 100,000 pages its facts take seconds to read).
    /// `with_pages` is not called when the answer is `None`; its future is awaited to the end
    /// even when the rest fails to read.
    pub async fn knowledge_changes_since_with<T, F, Fut>(
        &self,
        tenant: &str,
        since: i64,
        with_pages: F,
    ) -> Result<Option<(KnowledgeChanges, T)>, StoreError>
    where
        F: FnOnce(Vec<PageVersion>) -> Fut,
        Fut: Future<Output = (Vec<PageVersion>, T)>,
    {
        let txn = self.begin_read().await?;
        let version = tenant_state::Entity::find_by_id(tenant.to_owned())
            .one(&txn)
            .await?
            .map_or(0, |s| s.knowledge_version);
        if version < since {
            txn.commit().await?;
            return Ok(None);
        }
        let commits = knowledge_commit::Entity::find()
            .filter(knowledge_commit::Column::Tenant.eq(tenant))
            .filter(knowledge_commit::Column::Version.gt(since))
            .filter(knowledge_commit::Column::Version.lte(version))
            .order_by_asc(knowledge_commit::Column::Version)
            .all(&txn)
            .await?;
        let complete = commits.len() as i64 == version - since;
        if !complete || commits.iter().any(|c| c.ontology_changed) {
            txn.commit().await?;
            return Ok(None);
        }
        let removed_entities = commits
            .iter()
            .flat_map(|c| decode_list(&c.removed_entities))
            .collect();
        let pages = page_rows(&txn, tenant, Some(since)).await?;
        let (other, (pages, made)) =
            tokio::join!(other_rows(&txn, tenant, Some(since)), with_pages(pages));
        let other = other?;
        txn.commit().await?;
        Ok(Some((
            KnowledgeChanges {
                version,
                pages,
                extraction_log: other.extraction_log,
                entities: other.entities,
                removed_entities,
                facts: other.facts,
            },
            made,
        )))
    }

    /// Maintenance runs of a tenant, oldest first.
    pub async fn maintenance_runs(&self, tenant: &str) -> Result<Vec<StoredRun>, StoreError> {
        maintenance_run::Entity::find()
            .filter(maintenance_run::Column::Tenant.eq(tenant))
            .order_by_asc(maintenance_run::Column::Id)
            .rows(&self.db, |row| StoredRun {
                seq: row.seq,
                mode: row.mode,
                report: MaintenanceReport {
                    pages_read: to_u64(row.pages_read),
                    pages_total: to_u64(row.pages_total),
                    est_tokens: to_u64(row.est_tokens),
                    graph_writes: to_u64(row.graph_writes),
                    model: ModelUsage {
                        dropped: to_u64(row.model_dropped),
                        errors: to_u64(row.model_errors),
                        cost: ModelCost {
                            requests: to_u64(row.model_requests),
                            sentences_sent: to_u64(row.model_sentences),
                            cache_hits: to_u64(row.model_cache_hits),
                            prompt_tokens: to_u64(row.model_prompt_tokens),
                            completion_tokens: to_u64(row.model_completion_tokens),
                            tokens: to_u64(row.model_tokens),
                        },
                        ..ModelUsage::default()
                    },
                },
            })
            .await
    }

    /// Commits one analyst step atomically if the tenant is still at `expected_version`;
    /// returns the new version, or [`StoreError::Conflict`] when another writer got there first.
    pub async fn commit_knowledge(
        &self,
        tenant: &str,
        expected_version: i64,
        mut commit: KnowledgeCommit,
    ) -> Result<i64, StoreError> {
        // A commit of several events may write one fact or entity more than once; its last write
        // is what holds (and an upsert may touch a row only once per statement on PostgreSQL).
        last_write_wins(&mut commit.facts, |fact| fact.id);
        last_write_wins(&mut commit.entities, |entity| entity.id.clone());
        last_write_wins(&mut commit.extraction_log, |(doc_id, ..)| doc_id.clone());
        let txn = self.writer.begin().await?;
        let now = Utc::now();
        let next = expected_version + 1;
        let claimed = if expected_version == 0 {
            let row = tenant_state::ActiveModel {
                tenant: Set(tenant.to_owned()),
                ontology: Set(commit.ontology.clone()),
                knowledge_version: Set(next),
                updated_at: Set(now),
            };
            tenant_state::Entity::insert(row)
                .on_conflict(
                    OnConflict::column(tenant_state::Column::Tenant)
                        .do_nothing()
                        .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?
        } else {
            let mut update = tenant_state::Entity::update_many()
                .col_expr(tenant_state::Column::KnowledgeVersion, Expr::value(next))
                .col_expr(tenant_state::Column::UpdatedAt, Expr::value(now));
            if let Some(ontology) = &commit.ontology {
                update = update.col_expr(
                    tenant_state::Column::Ontology,
                    Expr::value(ontology.clone()),
                );
            }
            update
                .filter(tenant_state::Column::Tenant.eq(tenant))
                .filter(tenant_state::Column::KnowledgeVersion.eq(expected_version))
                .exec(&txn)
                .await?
                .rows_affected
        };
        if claimed != 1 {
            txn.rollback().await?;
            return Err(StoreError::Conflict {
                tenant: tenant.to_owned(),
            });
        }
        if !commit.pages.is_empty() {
            let rows = commit.pages.iter().map(|page| page_version::ActiveModel {
                tenant: Set(tenant.to_owned()),
                doc_id: Set(page.source_id.clone()),
                version: Set(to_i64(page.version)),
                title: Set(page.title.clone()),
                origin: Set(page.origin.clone()),
                body: Set(page.body.clone()),
                content_hash: Set(content_hash(&page.body)),
                updated_at: Set(page.updated_at),
                acl: Set(encode_list(&page.acl)),
                confidence: Set(page.confidence),
                changed_in: Set(next),
                deleted: Set(page.deleted),
                effective_from: Set(page.effective_from),
                ..Default::default()
            });
            page_version::Entity::insert_many(rows)
                .exec_without_returning(&txn)
                .await?;
        }
        if !commit.removed_entities.is_empty() {
            entity_row::Entity::delete_many()
                .filter(entity_row::Column::Tenant.eq(tenant))
                .filter(entity_row::Column::Id.is_in(commit.removed_entities.clone()))
                .exec(&txn)
                .await?;
        }
        let entities = Batch {
            chunk: CHUNK,
            key: &[entity_row::Column::Tenant, entity_row::Column::Id],
            update: &[
                entity_row::Column::Name,
                entity_row::Column::EntityType,
                entity_row::Column::Aliases,
                entity_row::Column::ChangedIn,
            ],
        };
        entities
            .write(&txn, &commit.entities, |e| entity_row::ActiveModel {
                tenant: Set(tenant.to_owned()),
                id: Set(e.id.clone()),
                name: Set(e.name.clone()),
                entity_type: Set(e.entity_type.clone()),
                aliases: Set(encode_list(&e.aliases.iter().cloned().collect::<Vec<_>>())),
                changed_in: Set(next),
            })
            .await?;
        let facts = Batch {
            chunk: CHUNK,
            key: &[fact::Column::Tenant, fact::Column::Id],
            update: &[
                fact::Column::Entity,
                fact::Column::SeenVersion,
                fact::Column::ValidTo,
                fact::Column::ChangedIn,
            ],
        };
        facts
            .write(&txn, &commit.facts, |f| fact::ActiveModel {
                tenant: Set(tenant.to_owned()),
                id: Set(to_i64(f.id)),
                entity: Set(f.entity.clone()),
                predicate: Set(f.predicate.clone()),
                object: Set(f.object.clone()),
                source_id: Set(f.source.source_id.clone()),
                source_version: Set(to_i64(f.source.version)),
                seen_version: Set(to_i64(f.seen_version)),
                origin: Set(f.source.origin.clone()),
                authority: Set(f.authority),
                extracted_at: Set(f.extracted_at),
                valid_from: Set(f.valid_from),
                valid_to: Set(f.valid_to),
                extractor: Set(f.extractor.clone()),
                confidence: Set(f.confidence),
                acl: Set(encode_list(&f.acl)),
                changed_in: Set(next),
                scope: Set(f.scope.encode()),
            })
            .await?;
        let extractions = Batch {
            chunk: CHUNK,
            key: &[
                extraction_log::Column::Tenant,
                extraction_log::Column::DocId,
            ],
            update: &[
                extraction_log::Column::Version,
                extraction_log::Column::ExtractedAt,
                extraction_log::Column::ChangedIn,
            ],
        };
        extractions
            .write(&txn, &commit.extraction_log, |(doc_id, version, at)| {
                extraction_log::ActiveModel {
                    tenant: Set(tenant.to_owned()),
                    doc_id: Set(doc_id.clone()),
                    version: Set(to_i64(*version)),
                    extracted_at: Set(*at),
                    changed_in: Set(next),
                }
            })
            .await?;
        for run in &commit.runs {
            let model = &run.report.model;
            let row = maintenance_run::ActiveModel {
                tenant: Set(tenant.to_owned()),
                seq: Set(run.seq),
                mode: Set(run.mode.clone()),
                pages_read: Set(to_i64(run.report.pages_read)),
                pages_total: Set(to_i64(run.report.pages_total)),
                est_tokens: Set(to_i64(run.report.est_tokens)),
                graph_writes: Set(to_i64(run.report.graph_writes)),
                model_requests: Set(to_i64(model.cost.requests)),
                model_sentences: Set(to_i64(model.cost.sentences_sent)),
                model_cache_hits: Set(to_i64(model.cost.cache_hits)),
                model_prompt_tokens: Set(to_i64(model.cost.prompt_tokens)),
                model_completion_tokens: Set(to_i64(model.cost.completion_tokens)),
                model_tokens: Set(to_i64(model.cost.tokens)),
                model_dropped: Set(to_i64(model.dropped)),
                model_errors: Set(to_i64(model.errors)),
                at: Set(run.at),
                ..Default::default()
            };
            maintenance_run::Entity::insert(row)
                .exec_without_returning(&txn)
                .await?;
        }
        // What the rows cannot say, so a reader can catch up from the version before.
        knowledge_commit::Entity::insert(knowledge_commit::ActiveModel {
            tenant: Set(tenant.to_owned()),
            version: Set(next),
            ontology_changed: Set(commit.ontology.is_some()),
            removed_entities: Set(encode_list(&commit.removed_entities)),
        })
        .exec_without_returning(&txn)
        .await?;
        if let Some(gate) = &commit.gate
            && let Err(err) = crate::gate::gate_write_in(&txn, tenant, gate).await
        {
            txn.rollback().await?;
            return Err(err);
        }
        settle_in(&txn, tenant, &commit.messages, &commit.settled, now).await?;
        txn.commit().await?;
        self.feed.announce();
        Ok(next)
    }
}

/// Keeps only the last of the items that share a key, in the order of those last writes.
fn last_write_wins<T, K: Eq + std::hash::Hash>(items: &mut Vec<T>, key: impl Fn(&T) -> K) {
    let mut seen = std::collections::HashSet::with_capacity(items.len());
    let mut kept: Vec<T> = items
        .drain(..)
        .rev()
        .filter(|item| seen.insert(key(item)))
        .collect();
    kept.reverse();
    *items = kept;
}

/// Hex SHA-256 of a page body; an unchanged body is not a new version.
pub fn content_hash(body: &str) -> String {
    ontoloop_core::digest::sha256_hex(&[body.as_bytes()])
}

// A tenant's knowledge rows, read by `page_rows` and `other_rows`: all of them, or with `since`
// those a commit after that version wrote. Pages oldest first per page; entities in id order
// (where two claim one name, the graph gives it to the later id, the same on every backend);
// facts in id order.

/// A tenant's knowledge rows but its pages.
struct OtherRows {
    extraction_log: Vec<(String, u64)>,
    entities: Vec<Entity>,
    facts: Vec<Fact>,
}

// Each read is ordered here, not by its query: with `since` the rows come through the
// (tenant, changed_in) index, and SQLite sorts them in a temporary B-tree, spilled to disk for
// a large range (the pages of a whole load).

/// The page versions of `tenant`, read in `txn`.
async fn page_rows(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    since: Option<i64>,
) -> Result<Vec<PageVersion>, StoreError> {
    use sea_orm::QueryTrait;
    let mut pages: Vec<PageVersion> = page_version::Entity::find()
        .filter(page_version::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| {
            q.filter(page_version::Column::ChangedIn.gt(v))
        })
        .rows(txn, page_from)
        .await?;
    pages.sort_unstable_by(|a, b| (&a.source_id, a.version).cmp(&(&b.source_id, b.version)));
    Ok(pages)
}

/// The rest of `tenant`'s knowledge rows ([`OtherRows`]), read in `txn`.
async fn other_rows(
    txn: &sea_orm::DatabaseTransaction,
    tenant: &str,
    since: Option<i64>,
) -> Result<OtherRows, StoreError> {
    use sea_orm::QueryTrait;
    let extraction_log = extraction_log::Entity::find()
        .filter(extraction_log::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| {
            q.filter(extraction_log::Column::ChangedIn.gt(v))
        })
        .rows(txn, |row| (row.doc_id, to_u64(row.version)))
        .await?;
    let mut entities: Vec<Entity> = entity_row::Entity::find()
        .filter(entity_row::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| q.filter(entity_row::Column::ChangedIn.gt(v)))
        .rows(txn, entity_from)
        .await?;
    entities.sort_unstable_by(|a, b| a.id.cmp(&b.id));
    let mut facts: Vec<Fact> = fact::Entity::find()
        .filter(fact::Column::Tenant.eq(tenant))
        .apply_if(since, |q, v| q.filter(fact::Column::ChangedIn.gt(v)))
        .rows(txn, fact_from)
        .await?;
    facts.sort_unstable_by_key(|f| f.id);
    Ok(OtherRows {
        extraction_log,
        entities,
        facts,
    })
}

fn page_from(row: page_version::Model) -> PageVersion {
    PageVersion {
        source_id: row.doc_id,
        version: to_u64(row.version),
        title: row.title,
        origin: row.origin,
        body: row.body,
        updated_at: row.updated_at,
        acl: decode_list(&row.acl),
        confidence: row.confidence,
        deleted: row.deleted,
        effective_from: row.effective_from,
    }
}

fn entity_from(row: entity_row::Model) -> Entity {
    Entity {
        id: row.id,
        name: row.name,
        entity_type: row.entity_type,
        aliases: decode_list(&row.aliases)
            .into_iter()
            .collect::<BTreeSet<_>>(),
    }
}

fn fact_from(row: fact::Model) -> Fact {
    Fact {
        id: to_u64(row.id),
        entity: row.entity,
        predicate: row.predicate,
        object: row.object,
        source: SourceRef {
            source_id: row.source_id,
            version: to_u64(row.source_version),
            origin: row.origin,
        },
        seen_version: to_u64(row.seen_version),
        authority: row.authority,
        extracted_at: row.extracted_at,
        valid_from: row.valid_from,
        valid_to: row.valid_to,
        extractor: row.extractor,
        confidence: row.confidence,
        acl: decode_list(&row.acl),
        // Written by `Scope::encode`; a row that cannot be read back holds everywhere.
        scope: Scope::parse(&row.scope).unwrap_or_default(),
    }
}

fn encode_list(items: &[String]) -> String {
    serde_json::to_string(items).unwrap_or_else(|_| "[]".to_owned())
}

fn decode_list(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_default()
}

fn to_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or_default()
}

fn to_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::last_write_wins;

    #[test]
    fn an_item_written_twice_in_one_commit_keeps_its_last_write() {
        let mut writes = vec![(1, "a"), (2, "b"), (1, "c"), (3, "d"), (2, "e")];
        last_write_wins(&mut writes, |(id, _)| *id);
        assert_eq!(writes, [(1, "c"), (3, "d"), (2, "e")]);
    }
}
