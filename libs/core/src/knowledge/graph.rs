//! The knowledge graph of one tenant: entities with canonical ids and aliases, and versioned
//! facts with provenance. Facts are superseded (given a `valid_to`), never overwritten, so the
//! graph still answers "as of" any earlier instant.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::extract::RULE_SET;
use super::names::NameNormaliser;
use super::ontology::{Ontology, PredicateKind};
use super::scope::Scope;
use super::semantic::Lexicon;
use crate::Caller;

mod derived;
mod needles;
mod pages;

use derived::Derived;
pub use needles::{NameNeedles, plain_words};
pub use pages::{
    PageVersion, current_versions, versions_announced, versions_in_effect, versions_to_read,
};

/// Origin of system-of-record facts whose source names no system (`record:billing` names
/// `record`, `registry:missions` names `registry`); its authority comes from the ontology like
/// any origin's.
pub const RECORD_ORIGIN: &str = "record";

/// What a record fact's extractor starts with (`record:billing`): how a fact stated by a system
/// of record is told from one read from a page, whatever origin its source names.
pub const RECORD_EXTRACTOR_PREFIX: &str = "record:";

/// The origin of a record source: the part before the first `:`.
pub fn record_origin(source: &str) -> String {
    match source.split_once(':') {
        Some((system, _)) if !system.trim().is_empty() => system.trim().to_owned(),
        _ => RECORD_ORIGIN.to_owned(),
    }
}

/// Where a fact came from: a source and the version of it that was read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SourceRef {
    /// Page id, or record system id (`record:billing`).
    pub source_id: String,
    /// Version read (records: the intake sequence number).
    pub version: u64,
    /// Origin (decides authority).
    pub origin: String,
}

/// Whether an ACL admits `caller`: an empty ACL admits the whole tenant, an entry admits the
/// principal it names and every member of the group it names (groups come from the token).
pub fn readable(acl: &[String], caller: &Caller) -> bool {
    caller.admitted_by(acl)
}

/// What one caller may read of a tenant's knowledge. A page is read under the ACL of its newest
/// version, whatever version is at hand: narrowing a page's ACL narrows every older version and
/// every fact read from any of them, and a caller the newest version does not admit cannot read
/// the page at all, so nothing it is shown (value, hedge, version number) can tell that a
/// restricted version exists. A fact needs its own ACL too (the one of the version it was read
/// from), so widening a page never opens what an older, narrower version said. Record sources
/// are not pages and are decided by the fact's ACL alone.
#[derive(Debug, Clone, Copy)]
pub struct Access<'a> {
    caller: &'a Caller,
    latest: &'a BTreeMap<String, PageVersion>,
}

impl<'a> Access<'a> {
    /// `caller`'s access, with `latest` the newest version of every page of the tenant (not the
    /// versions current at an earlier instant: permission is always today's).
    pub fn new(caller: &'a Caller, latest: &'a BTreeMap<String, PageVersion>) -> Self {
        Self { caller, latest }
    }

    /// The caller.
    pub fn caller(&self) -> &'a Caller {
        self.caller
    }

    /// Whether the caller may read source `source_id` at all: its newest version admits them,
    /// or it is not a page.
    pub fn source(&self, source_id: &str) -> bool {
        self.latest
            .get(source_id)
            .is_none_or(|page| readable(&page.acl, self.caller))
    }

    /// Whether the caller may read this version of a page.
    pub fn page(&self, page: &PageVersion) -> bool {
        readable(&page.acl, self.caller) && self.source(&page.source_id)
    }

    /// Whether the caller may read a fact: its own ACL and its source's newest ACL admit them.
    pub fn fact(&self, fact: &Fact) -> bool {
        readable(&fact.acl, self.caller) && self.source(&fact.source.source_id)
    }
}

/// An entity: canonical id, display name, type, every name it has been called.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entity {
    /// Canonical id (`ent:` + the key of the first name seen).
    pub id: String,
    /// Current display name.
    pub name: String,
    /// Entity type, when known.
    pub entity_type: Option<String>,
    /// Every name, current and former.
    pub aliases: BTreeSet<String>,
}

/// A fact with its provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fact {
    /// Id, unique in the tenant.
    pub id: u64,
    /// Canonical subject entity id.
    pub entity: String,
    /// Predicate name.
    pub predicate: String,
    /// Object value as stated.
    pub object: String,
    /// Source and version first stating it.
    pub source: SourceRef,
    /// Latest version of the source known to still state it.
    pub seen_version: u64,
    /// Authority of the origin.
    pub authority: i32,
    /// When the graph extracted it.
    pub extracted_at: DateTime<Utc>,
    /// When it became valid (the source version's time).
    pub valid_from: DateTime<Utc>,
    /// When it stopped being valid.
    pub valid_to: Option<DateTime<Utc>>,
    /// Rule-set version, or model and prompt version.
    pub extractor: String,
    /// Extraction confidence.
    pub confidence: f64,
    /// Who may read the version it was read from; the ACL of the source's newest version must
    /// admit a reader too ([`Access::fact`]).
    pub acl: Vec<String>,
    /// Where the value holds (`region=EU`): from the sentence's scoping phrase or the record's
    /// scope; everywhere when empty. Values of one slot in different scopes do not supersede
    /// each other; answers weigh them with [`super::scope::by_scope`].
    pub scope: Scope,
}

/// A system-of-record value as [`Graph::apply_record`] applies it.
#[derive(Debug, Clone, Copy)]
pub struct RecordValue<'a> {
    /// The record system (`record:billing`); its origin is the part before the first `:`.
    pub source: &'a str,
    /// The event's sequence: the fact's source version.
    pub sequence: u64,
    /// The entity, by any of its names.
    pub entity: &'a str,
    /// The predicate.
    pub predicate: &'a str,
    /// The value.
    pub value: &'a str,
    /// When it was recorded.
    pub at: DateTime<Utc>,
    /// When it takes effect, if later than `at`.
    pub effective_from: Option<DateTime<Utc>>,
    /// Where it holds.
    pub scope: &'a Scope,
}

impl Fact {
    /// Whether the fact held at `at`.
    pub fn valid_at(&self, at: DateTime<Utc>) -> bool {
        self.valid_from <= at && self.valid_to.is_none_or(|to| at < to)
    }

    /// Whether the fact has not been superseded.
    pub fn is_current(&self) -> bool {
        self.valid_to.is_none()
    }

    /// Whether a system of record stated it (`record.set`), rather than a page.
    pub fn is_record(&self) -> bool {
        self.extractor.starts_with(RECORD_EXTRACTOR_PREFIX)
    }
}

/// What one maintenance step changed, for persistence and cost reports.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Changes {
    /// Entities created or changed (merged, renamed, new alias).
    pub entities: BTreeSet<String>,
    /// Entities merged away into another (id, into).
    pub merged: Vec<(String, String)>,
    /// Facts created or superseded (ids).
    pub facts: BTreeSet<u64>,
    /// Graph writes: facts added plus facts superseded plus alias changes.
    pub writes: u64,
}

impl Changes {
    /// Folds another step's changes into this one.
    pub fn absorb(&mut self, other: Changes) {
        self.entities.extend(other.entities);
        self.merged.extend(other.merged);
        self.facts.extend(other.facts);
        self.writes += other.writes;
    }
}

/// The graph of one tenant.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    normaliser: NameNormaliser,
    entities: BTreeMap<String, Entity>,
    index: HashMap<String, String>,
    facts: Vec<Fact>,
    /// The ids of each source's facts: a page's facts are found without reading every fact of
    /// the tenant (which made each page's read grow with the tenant).
    by_source: HashMap<String, Vec<u64>>,
    /// The ids of each entity's facts, ascending: a slot's facts are found without reading
    /// every fact of the tenant (which made each Ask and each checked claim grow with it).
    by_entity: HashMap<String, Vec<u64>>,
    next_fact_id: u64,
    derived: Derived,
}

/// A value a page states: entity id, predicate, object and the scope it holds in.
type PageSlot = (String, String, String, Scope);

impl Graph {
    /// An empty graph whose names are normalised with the ontology's type nouns.
    pub fn new(ontology: &Ontology) -> Self {
        Self {
            normaliser: NameNormaliser::new(ontology.type_nouns()),
            next_fact_id: 1,
            ..Self::default()
        }
    }

    /// Rebuilds a graph from stored entities and facts.
    pub fn from_parts(ontology: &Ontology, entities: Vec<Entity>, facts: Vec<Fact>) -> Self {
        Self::assemble(Self::new(ontology), entities, facts)
    }

    /// What `access` lets its caller see of the graph: `None` when it admits every fact (the
    /// whole graph is theirs), else a graph of only the admitted facts and the entities they
    /// name. An entity that only hidden facts name is then unknown to the caller: it cannot be
    /// resolved, linked or told apart from a name that names nothing (no canonical id, type or
    /// abstention of another wording gives it away). Aliases go with their entity.
    pub fn visible_to(&self, access: &Access<'_>) -> Option<Graph> {
        if self.facts.iter().all(|f| access.fact(f)) {
            return None;
        }
        let facts: Vec<Fact> = self
            .facts
            .iter()
            .filter(|f| access.fact(f))
            .cloned()
            .collect();
        let mut named: BTreeSet<&str> = BTreeSet::new();
        for fact in &facts {
            named.insert(fact.entity.as_str());
            if let Some(object) = self.resolve(&fact.object) {
                named.insert(object.id.as_str());
            }
        }
        let entities = self
            .entities
            .values()
            .filter(|e| named.contains(e.id.as_str()))
            .cloned()
            .collect();
        let empty = Self {
            normaliser: self.normaliser.clone(),
            ..Self::default()
        };
        let mut graph = Self::assemble(empty, entities, facts);
        graph.next_fact_id = self.next_fact_id;
        Some(graph)
    }

    /// `graph` (empty) with `entities` and `facts`, indexed.
    fn assemble(mut graph: Self, entities: Vec<Entity>, facts: Vec<Fact>) -> Self {
        for entity in entities {
            for alias in &entity.aliases {
                graph
                    .index
                    .insert(graph.normaliser.key(alias), entity.id.clone());
            }
            graph
                .index
                .insert(graph.normaliser.key(&entity.name), entity.id.clone());
            graph.entities.insert(entity.id.clone(), entity);
        }
        graph.next_fact_id = facts.iter().map(|f| f.id + 1).max().unwrap_or(1);
        for fact in &facts {
            graph.index_fact(fact);
        }
        graph.facts = facts;
        graph
    }

    /// Brings the graph to a later state of the store without building it again: `removed`
    /// entities out, `entities` inserted or replaced, `facts` inserted or replaced by id (what a
    /// commit wrote, read back). The result equals [`Graph::from_parts`] over the later rows:
    /// where two entities claim one name, the later id has it, as when entities are assembled
    /// in id order.
    pub fn patch(&mut self, removed: &[String], entities: Vec<Entity>, facts: Vec<Fact>) {
        // What is derived for reading follows what only grew; anything else is computed again.
        if !removed.is_empty() {
            self.derived.clear();
        }
        for id in removed {
            if let Some(gone) = self.entities.remove(id) {
                let keys = self.keys_of(&gone);
                self.reassign(&keys, id);
            }
        }
        for entity in entities {
            let keys = self.keys_of(&entity);
            let id_of_new = entity.id.clone();
            if let Some(old) = self.entities.get(&entity.id) {
                let dropped: BTreeSet<String> =
                    self.keys_of(old).difference(&keys).cloned().collect();
                let only_grew = dropped.is_empty()
                    && old.entity_type == entity.entity_type
                    && old.aliases.is_subset(&entity.aliases);
                if !only_grew {
                    self.derived.clear();
                }
                self.entities.insert(id_of_new.clone(), entity);
                self.reassign(&dropped, &id_of_new);
            } else {
                self.entities.insert(entity.id.clone(), entity);
            }
            if let Some(entity) = self.entities.get(&id_of_new) {
                self.derived.grew(&self.normaliser, entity);
            }
            for key in keys {
                // A later id that still claims the name keeps it.
                let kept = self.index.get(&key).is_some_and(|holder| {
                    *holder > id_of_new
                        && self
                            .entities
                            .get(holder)
                            .is_some_and(|e| self.keys_of(e).contains(&key))
                });
                if !kept {
                    // A name taken over from another entity moves what that one's facts imply.
                    if self
                        .index
                        .get(&key)
                        .is_some_and(|holder| *holder != id_of_new)
                    {
                        self.derived.clear();
                    }
                    self.index.insert(key, id_of_new.clone());
                }
            }
        }
        let changed: Vec<u64> = facts.iter().map(|f| f.id).collect();
        for fact in facts {
            self.next_fact_id = self.next_fact_id.max(fact.id + 1);
            match self.facts.binary_search_by_key(&fact.id, |f| f.id) {
                Ok(at) => {
                    let held = &self.facts[at];
                    let moved = held.source.source_id != fact.source.source_id
                        || held.entity != fact.entity;
                    let before = std::mem::replace(&mut self.facts[at], fact);
                    if moved {
                        self.unindex_fact(&before);
                        let after = self.facts[at].clone();
                        self.index_fact(&after);
                    }
                }
                Err(at) => {
                    self.index_fact(&fact);
                    self.facts.insert(at, fact);
                }
            }
        }
        self.facts_changed(changed);
    }

    /// Keeps what is derived for reading true after facts changed: a fact only changes the
    /// lexicon through an entity of no type of its own (whose types the facts imply), so
    /// anything else leaves it as it is.
    fn facts_changed(&mut self, ids: impl IntoIterator<Item = u64>) {
        let untyped = |id: &str| {
            self.entities
                .get(id)
                .is_none_or(|e| e.entity_type.is_none())
        };
        let implies = ids.into_iter().any(|id| {
            self.fact(id).is_some_and(|fact| {
                untyped(&fact.entity)
                    || self
                        .index
                        .get(&self.normaliser.key(&fact.object))
                        .is_some_and(|object| untyped(object))
            })
        });
        if implies {
            self.derived.clear();
        }
    }

    /// The index keys of an entity: its name's and every alias's.
    fn keys_of(&self, entity: &Entity) -> BTreeSet<String> {
        entity
            .aliases
            .iter()
            .chain([&entity.name])
            .map(|name| self.normaliser.key(name))
            .collect()
    }

    /// Gives each of `keys` that `from` held (and no longer holds) to the entity with the
    /// highest id that still claims it, or to none.
    fn reassign(&mut self, keys: &BTreeSet<String>, from: &str) {
        for key in keys {
            if self.index.get(key).is_some_and(|holder| holder == from) {
                self.index.remove(key);
                let heir = self
                    .entities
                    .values()
                    .filter(|e| self.keys_of(e).contains(key))
                    .map(|e| e.id.clone())
                    .max();
                if let Some(heir) = heir {
                    self.index.insert(key.clone(), heir);
                }
            }
        }
    }

    /// The name normaliser.
    pub fn normaliser(&self) -> &NameNormaliser {
        &self.normaliser
    }

    /// The entity a name, alias or canonical id refers to.
    pub fn resolve(&self, name: &str) -> Option<&Entity> {
        if let Some(entity) = self.entities.get(name) {
            return Some(entity);
        }
        let id = self.index.get(&self.normaliser.key(name))?;
        self.entities.get(id)
    }

    /// An entity by id.
    pub fn entity(&self, id: &str) -> Option<&Entity> {
        self.entities.get(id)
    }

    /// Every entity.
    pub fn entities(&self) -> impl Iterator<Item = &Entity> {
        self.entities.values()
    }

    /// Every fact, current and superseded.
    pub fn facts(&self) -> &[Fact] {
        &self.facts
    }

    /// A fact by id.
    pub fn fact(&self, id: u64) -> Option<&Fact> {
        // Facts are kept in id order (assembled so, appended with growing ids).
        match self.facts.binary_search_by_key(&id, |f| f.id) {
            Ok(at) => self.facts.get(at),
            Err(_) => self.facts.iter().find(|f| f.id == id),
        }
    }

    /// Facts of one slot valid at `at`.
    pub fn slot_at<'a>(
        &'a self,
        entity: &'a str,
        predicate: &'a str,
        at: DateTime<Utc>,
    ) -> impl Iterator<Item = &'a Fact> + 'a {
        self.facts_of(entity)
            .filter(move |f| f.predicate == predicate && f.valid_at(at))
    }

    /// Every fact of entity `id` (its canonical id), in id order, read through the entity's
    /// own list rather than every fact of the tenant.
    pub fn facts_of<'a>(&'a self, id: &str) -> impl Iterator<Item = &'a Fact> + use<'a> {
        self.by_entity
            .get(id)
            .into_iter()
            .flatten()
            .filter_map(|fact_id| self.fact(*fact_id))
    }

    /// The entity `name` refers to, created when unknown.
    pub fn ensure_entity(
        &mut self,
        name: &str,
        entity_type: Option<&str>,
        changes: &mut Changes,
    ) -> String {
        let key = self.normaliser.key(name);
        if let Some(id) = self.index.get(&key).cloned() {
            if let Some(entity) = self.entities.get_mut(&id) {
                let mut changed = entity.aliases.insert(name.trim().to_owned());
                if entity.entity_type.is_none() && entity_type.is_some() {
                    entity.entity_type = entity_type.map(str::to_owned);
                    // Its implied types give way to its own: computed again.
                    self.derived.clear();
                    changed = true;
                }
                if changed {
                    self.derived.grew(&self.normaliser, entity);
                    changes.entities.insert(id.clone());
                }
            }
            return id;
        }
        let id = format!("ent:{key}");
        let entity = Entity {
            id: id.clone(),
            name: name.trim().to_owned(),
            entity_type: entity_type
                .map(str::to_owned)
                .or_else(|| self.normaliser.type_of(name)),
            aliases: BTreeSet::from([name.trim().to_owned()]),
        };
        self.index.insert(key, id.clone());
        self.derived.grew(&self.normaliser, &entity);
        self.entities.insert(id.clone(), entity);
        changes.entities.insert(id.clone());
        changes.writes += 1;
        id
    }

    /// Renames: `new` becomes the display name of the entity called `old`, `old` stays an alias,
    /// and an entity already created under `new` is merged into it (its facts move over).
    pub fn rename(&mut self, old: &str, new: &str, changes: &mut Changes) -> String {
        self.derived.clear();
        let id = self.ensure_entity(old, None, changes);
        let new_key = self.normaliser.key(new);
        if let Some(other) = self
            .index
            .get(&new_key)
            .cloned()
            .filter(|other| *other != id)
            && let Some(absorbed) = self.entities.remove(&other)
        {
            let moved = self.by_entity.remove(&other).unwrap_or_default();
            for fact_id in &moved {
                if let Some(at) = self.position(*fact_id) {
                    self.facts[at].entity = id.clone();
                    changes.facts.insert(*fact_id);
                }
            }
            let held = self.by_entity.entry(id.clone()).or_default();
            held.extend(moved);
            held.sort_unstable();
            held.dedup();
            for alias in &absorbed.aliases {
                self.index.insert(self.normaliser.key(alias), id.clone());
            }
            if let Some(entity) = self.entities.get_mut(&id) {
                entity.aliases.extend(absorbed.aliases);
                if entity.entity_type.is_none() {
                    entity.entity_type = absorbed.entity_type;
                }
            }
            changes.merged.push((other, id.clone()));
            changes.writes += 1;
        }
        self.index.insert(new_key, id.clone());
        if let Some(entity) = self.entities.get_mut(&id)
            && entity.name != new.trim()
        {
            entity.name = new.trim().to_owned();
            entity.aliases.insert(new.trim().to_owned());
            changes.entities.insert(id.clone());
            changes.writes += 1;
        }
        id
    }

    /// Every name and alias the graph knows, with the types it may have (its own, else those
    /// its current facts imply), for linking mentions. Computed once per state of the graph and
    /// ontology and kept until the graph changes, so every question asked of one read model
    /// shares it.
    pub fn lexicon(&self, ontology: &Ontology) -> Arc<Lexicon> {
        let shape = Derived::shape(ontology);
        let mut cache = self
            .derived
            .lexicon
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((for_shape, lexicon)) = cache.as_ref()
            && *for_shape == shape
        {
            return Arc::clone(lexicon);
        }
        let lexicon = Arc::new(self.compute_lexicon(ontology).freeze());
        *cache = Some((shape, Arc::clone(&lexicon)));
        lexicon
    }

    /// Every name and alias by the words that name it in a question (see [`NameNeedles`]),
    /// computed once per state of the graph.
    pub fn needles(&self) -> Arc<NameNeedles> {
        let mut cache = self
            .derived
            .needles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(needles) = cache.as_ref() {
            return Arc::clone(needles);
        }
        let needles = Arc::new(self.compute_needles());
        *cache = Some(Arc::clone(&needles));
        needles
    }

    fn compute_needles(&self) -> NameNeedles {
        let mut needles = NameNeedles::default();
        for entity in self.entities.values() {
            for name in entity.aliases.iter().chain([&entity.name]) {
                needles.insert(&self.normaliser, name);
            }
        }
        needles
    }

    fn compute_lexicon(&self, ontology: &Ontology) -> Lexicon {
        let mut implied: HashMap<&str, BTreeSet<&str>> = HashMap::new();
        for fact in self.facts.iter().filter(|f| f.is_current()) {
            let Some(predicate) = ontology.predicate(&fact.predicate) else {
                continue;
            };
            if predicate.kind != PredicateKind::Slot {
                continue;
            }
            implied
                .entry(fact.entity.as_str())
                .or_default()
                .extend(predicate.subject_types.iter().map(String::as_str));
            if predicate.object_is_entity()
                && let Some(id) = self.index.get(&self.normaliser.key(&fact.object))
            {
                implied
                    .entry(id.as_str())
                    .or_default()
                    .insert(predicate.object_type.as_str());
            }
        }
        let mut lexicon = Lexicon::default();
        for entity in self.entities.values() {
            let types: Vec<&str> = match &entity.entity_type {
                Some(own) => vec![own.as_str()],
                None => implied
                    .get(entity.id.as_str())
                    .map(|t| t.iter().copied().collect())
                    .unwrap_or_default(),
            };
            for name in entity.aliases.iter().chain([&entity.name]) {
                lexicon.insert_types(&self.normaliser, name, types.iter().copied());
            }
        }
        lexicon
    }

    /// Reads one page version into the graph (patch): facts of older versions of the same page
    /// that this version no longer states are superseded when it takes effect
    /// ([`PageVersion::effective_at`]: for a version announced ahead, they hold until then);
    /// facts it still states are kept (so unchanged facts on a changed page keep their
    /// provenance), open-ended again if an earlier announcement had set them to end; new ones
    /// hold from when it takes effect. A newer version cancels what an older one had scheduled
    /// after it.
    pub fn apply_page(
        &mut self,
        ontology: &Ontology,
        page: &PageVersion,
        extracted_at: DateTime<Utc>,
    ) -> Changes {
        let mut changes = Changes::default();
        let claims =
            ontology
                .extraction()
                .scoped_claims(ontology, &page.body, &self.lexicon(ontology));
        // Renames first, so the page's other sentences land on the renamed entity.
        for (_, claim) in claims
            .iter()
            .filter(|(_, c)| c.kind == PredicateKind::Rename)
        {
            self.rename(&claim.object, claim.subject.name(), &mut changes);
        }
        let authority = ontology.authority(&page.origin);
        let mut stated = BTreeSet::new();
        let mut read_by: BTreeMap<PageSlot, (String, f64)> = BTreeMap::new();
        for (scope, claim) in claims.iter().filter(|(_, c)| c.kind == PredicateKind::Slot) {
            let entity_type = ontology
                .predicate(&claim.predicate)
                .and_then(|p| (p.subject_types.len() == 1).then(|| p.subject_types[0].clone()));
            let entity =
                self.ensure_entity(claim.subject.name(), entity_type.as_deref(), &mut changes);
            if let Some(object_type) = ontology
                .predicate(&claim.predicate)
                .filter(|p| p.object_is_entity())
                .map(|p| p.object_type.clone())
            {
                self.ensure_entity(&claim.object, Some(&object_type), &mut changes);
            }
            let slot = (
                entity,
                claim.predicate.clone(),
                claim.object.clone(),
                scope.clone(),
            );
            read_by
                .entry(slot.clone())
                .or_insert((claim.extractor.clone(), claim.confidence));
            stated.insert(slot);
        }
        let from = page.effective_at();
        let mut kept = BTreeSet::new();
        // The page's older facts that still hold, or that an announced version set to end
        // later than both this version's time and now (a fact ended by a deletion or a
        // rebuild keeps its history).
        let places: Vec<usize> = self
            .ids_of_source(&page.source_id)
            .into_iter()
            .filter_map(|id| self.position(id))
            .collect();
        for at in places {
            let fact = &mut self.facts[at];
            let open = fact.source.source_id == page.source_id
                && fact
                    .valid_to
                    .is_none_or(|to| to > from && to > extracted_at)
                && fact.source.version < page.version;
            if !open {
                continue;
            }
            let slot = (
                fact.entity.clone(),
                fact.predicate.clone(),
                fact.object.clone(),
                fact.scope.clone(),
            );
            if stated.contains(&slot) && fact.valid_from <= from {
                fact.seen_version = page.version;
                if fact.valid_to.take().is_some() {
                    changes.facts.insert(fact.id);
                    changes.writes += 1;
                }
                kept.insert(slot);
            } else {
                // A scheduled fact this version cancels ends where it would have begun.
                fact.valid_to = Some(from.max(fact.valid_from));
                changes.facts.insert(fact.id);
                changes.writes += 1;
            }
        }
        for slot in stated.into_iter().filter(|s| !kept.contains(s)) {
            let (extractor, stage_confidence) = read_by
                .get(&slot)
                .cloned()
                .unwrap_or_else(|| (RULE_SET.to_owned(), 1.0));
            let (entity, predicate, object, scope) = slot;
            let of_page = self.by_source.get(&page.source_id).into_iter().flatten();
            if of_page.filter_map(|id| self.fact(*id)).any(|f| {
                f.is_current()
                    && f.source.source_id == page.source_id
                    && f.entity == entity
                    && f.predicate == predicate
                    && f.object == object
                    && f.scope == scope
            }) {
                continue;
            }
            let id = self.push_fact(Fact {
                id: 0,
                entity,
                predicate,
                object,
                source: SourceRef {
                    source_id: page.source_id.clone(),
                    version: page.version,
                    origin: page.origin.clone(),
                },
                seen_version: page.version,
                authority,
                extracted_at,
                valid_from: from,
                valid_to: None,
                extractor,
                confidence: page.confidence * stage_confidence,
                acl: page.acl.clone(),
                scope,
            });
            changes.facts.insert(id);
            changes.writes += 1;
        }
        self.facts_changed(changes.facts.iter().copied().collect::<Vec<_>>());
        changes
    }

    /// A system-of-record value, recorded at `at` and in effect from `effective_from` (`at` when
    /// absent or earlier: a value is never made retroactive), in its scope. It ends every value
    /// of the slot in the same scope on the canonical entity that holds at that instant,
    /// whatever spelling the pages used (values of other scopes stand: a record for the EU does
    /// not end the general price), and becomes the slot's record fact until the next value
    /// already scheduled after it in that scope, if any. A value announced for the future is
    /// therefore not valid before its time ([`Fact::valid_at`]), and a value recorded meanwhile
    /// does not cancel it.
    pub fn apply_record(&mut self, ontology: &Ontology, record: &RecordValue<'_>) -> Changes {
        let RecordValue {
            source,
            sequence,
            entity,
            predicate,
            value,
            at,
            effective_from,
            scope,
        } = *record;
        let mut changes = Changes::default();
        let from = effective_from.map_or(at, |e| e.max(at));
        let entity_type = ontology
            .predicate(predicate)
            .and_then(|p| (p.subject_types.len() == 1).then(|| p.subject_types[0].clone()));
        let id = self.ensure_entity(entity, entity_type.as_deref(), &mut changes);
        let mut until: Option<DateTime<Utc>> = None;
        let places: Vec<usize> = self
            .by_entity
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|fact_id| self.position(*fact_id))
            .collect();
        for at in places {
            let fact = &mut self.facts[at];
            if fact.predicate != predicate || fact.scope != *scope {
                continue;
            }
            let scheduled = fact.valid_from > from && fact.is_record();
            if scheduled {
                until = Some(until.map_or(fact.valid_from, |u| u.min(fact.valid_from)));
            } else if fact.valid_at(from) || fact.is_current() {
                fact.valid_to = Some(from);
                changes.facts.insert(fact.id);
                changes.writes += 1;
            }
        }
        let origin = record_origin(source);
        let fact_id = self.push_fact(Fact {
            id: 0,
            entity: id,
            predicate: predicate.to_owned(),
            object: value.to_owned(),
            source: SourceRef {
                source_id: source.to_owned(),
                version: sequence,
                origin: origin.clone(),
            },
            seen_version: sequence,
            authority: ontology.authority(&origin),
            extracted_at: at,
            valid_from: from,
            valid_to: until,
            extractor: format!("{RECORD_EXTRACTOR_PREFIX}{source}"),
            confidence: 1.0,
            acl: Vec::new(),
            scope: scope.clone(),
        });
        changes.facts.insert(fact_id);
        changes.writes += 1;
        self.facts_changed(changes.facts.iter().copied().collect::<Vec<_>>());
        changes
    }

    /// Supersedes every page fact still valid at `at` or set to end later (a full rebuild starts
    /// from here and re-reads every current page); record facts stay, whatever their source's
    /// origin, since no page is their source of truth.
    pub fn retire_page_facts(&mut self, at: DateTime<Utc>) -> Changes {
        self.derived.clear();
        let mut changes = Changes::default();
        for fact in self
            .facts
            .iter_mut()
            .filter(|f| f.valid_to.is_none_or(|to| to > at) && !f.is_record())
        {
            fact.valid_to = Some(at);
            changes.facts.insert(fact.id);
            changes.writes += 1;
        }
        changes
    }

    /// Appends a fact with the next id; the caller tells what is derived ([`Self::facts_changed`]).
    fn push_fact(&mut self, mut fact: Fact) -> u64 {
        fact.id = self.next_fact_id;
        self.next_fact_id += 1;
        let id = fact.id;
        self.index_fact(&fact);
        self.facts.push(fact);
        id
    }

    /// Lists `fact` under its source and its entity.
    fn index_fact(&mut self, fact: &Fact) {
        for (map, key) in [
            (&mut self.by_source, &fact.source.source_id),
            (&mut self.by_entity, &fact.entity),
        ] {
            let ids = map.entry(key.clone()).or_default();
            if let Err(at) = ids.binary_search(&fact.id) {
                ids.insert(at, fact.id);
            }
        }
    }

    /// Takes `fact` off the lists of its source and its entity.
    fn unindex_fact(&mut self, fact: &Fact) {
        for (map, key) in [
            (&mut self.by_source, &fact.source.source_id),
            (&mut self.by_entity, &fact.entity),
        ] {
            if let Some(ids) = map.get_mut(key) {
                ids.retain(|id| *id != fact.id);
                if ids.is_empty() {
                    map.remove(key);
                }
            }
        }
    }

    /// The place of fact `id` in `facts`.
    fn position(&self, id: u64) -> Option<usize> {
        match self.facts.binary_search_by_key(&id, |f| f.id) {
            Ok(at) => Some(at),
            Err(_) => self.facts.iter().position(|f| f.id == id),
        }
    }

    /// The ids of the facts read from `source_id`.
    fn ids_of_source(&self, source_id: &str) -> Vec<u64> {
        self.by_source.get(source_id).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests;
