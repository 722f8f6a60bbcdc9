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

/// One immutable version of a page.
#[derive(Debug, Clone, PartialEq)]
pub struct PageVersion {
    /// Page id.
    pub source_id: String,
    /// Version number, from 1.
    pub version: u64,
    /// Title.
    pub title: String,
    /// Origin.
    pub origin: String,
    /// Body.
    pub body: String,
    /// When this version was captured (its event's time).
    pub updated_at: DateTime<Utc>,
    /// Principals or groups who may read it; empty means the whole tenant. Only the newest
    /// version's ACL decides who may read the page (see [`Access`]).
    pub acl: Vec<String>,
    /// Confidence in the text in (0, 1]; facts extracted from it inherit it.
    pub confidence: f64,
    /// A tombstone: the page was deleted at `updated_at`. It has no body, so reading it ends
    /// every fact of the page; it keeps the ACL of the version before (permission over the
    /// page's history stays as it was), and it is never indexed, cited or quoted.
    pub deleted: bool,
    /// When this version takes effect, if later than `updated_at`: a page published today for
    /// next month. Until then the version before it stays the page's current text, its facts
    /// hold, and answers note the change to come ([`PageVersion::effective_at`]).
    pub effective_from: Option<DateTime<Utc>>,
}

impl PageVersion {
    /// When this version takes effect: `effective_from` when later than the capture, else the
    /// capture (a version is never made retroactive). The facts read from it hold from here,
    /// the facts it drops end here, and `as_of` finds it from here.
    pub fn effective_at(&self) -> DateTime<Utc> {
        self.effective_from
            .map_or(self.updated_at, |e| e.max(self.updated_at))
    }

    /// The tombstone that deletes `latest` at `at` (the next version, no body).
    pub fn tombstone(latest: &PageVersion, at: DateTime<Utc>) -> PageVersion {
        PageVersion {
            source_id: latest.source_id.clone(),
            version: latest.version + 1,
            title: latest.title.clone(),
            origin: latest.origin.clone(),
            body: String::new(),
            updated_at: at,
            acl: latest.acl.clone(),
            confidence: latest.confidence,
            deleted: true,
            effective_from: None,
        }
    }
}

/// The newest version of every page among `pages`, scheduled or not, ordered by page id.
pub fn current_versions<'a>(pages: impl IntoIterator<Item = &'a PageVersion>) -> Vec<PageVersion> {
    let mut latest: BTreeMap<&str, &PageVersion> = BTreeMap::new();
    for page in pages {
        let slot = latest.entry(page.source_id.as_str()).or_insert(page);
        if page.version > slot.version {
            *slot = page;
        }
    }
    latest.into_values().cloned().collect()
}

/// The version of every page in effect at `at`: the newest among those in effect by then
/// ([`PageVersion::effective_at`]), ordered by page id. A page none of whose versions is in
/// effect yet is absent.
pub fn versions_in_effect<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion>,
    at: DateTime<Utc>,
) -> Vec<PageVersion> {
    current_versions(pages.into_iter().filter(|p| p.effective_at() <= at))
}

/// What a full read of `pages` reads at `at`, in order: the version of every page in effect,
/// then every later version announced to take effect after `at`, oldest first (so their facts
/// are scheduled behind the current ones, as when their events were applied).
pub fn versions_to_read<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion> + Clone,
    at: DateTime<Utc>,
) -> Vec<PageVersion> {
    let mut read = versions_in_effect(pages.clone(), at);
    let in_effect: BTreeMap<&str, u64> = read
        .iter()
        .map(|p| (p.source_id.as_str(), p.version))
        .collect();
    let announced = versions_announced(pages, at, |id| in_effect.get(id).copied());
    read.extend(announced);
    read
}

/// The versions of `pages` announced to take effect after `at` and newer than their page's
/// version in effect then (`in_effect`, by page id), soonest first.
pub fn versions_announced<'a>(
    pages: impl IntoIterator<Item = &'a PageVersion>,
    at: DateTime<Utc>,
    in_effect: impl Fn(&str) -> Option<u64>,
) -> Vec<PageVersion> {
    let mut announced: Vec<PageVersion> = pages
        .into_iter()
        .filter(|p| p.effective_at() > at && in_effect(&p.source_id).is_none_or(|v| p.version > v))
        .cloned()
        .collect();
    announced.sort_by_key(|p| (p.effective_at(), p.version));
    announced
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

/// A text's words, lowercase, split at anything not alphanumeric, joined by one space: how a
/// question and a name are compared.
pub fn plain_words(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect::<Vec<_>>()
        .join(" ")
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

/// What is derived from the whole graph for reading it — the lexicon (with the shape of the
/// ontology it was computed for: what of each predicate it reads) and the name needles — kept
/// until the graph changes, so every question asked of one state of the graph shares them.
#[derive(Default)]
struct Derived {
    lexicon: std::sync::Mutex<Option<(Vec<PredicateShape>, Arc<Lexicon>)>>,
    needles: std::sync::Mutex<Option<Arc<NameNeedles>>>,
}

/// Every name and alias of the graph by the words a question must contain to name it: its own
/// words, and its key's words (`"Kestrel mission"` is asked as `"Kestrel"`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct NameNeedles {
    by_words: HashMap<String, BTreeSet<String>>,
    by_key_words: HashMap<String, BTreeSet<String>>,
}

impl NameNeedles {
    /// Adds a name under its words and its key's words.
    fn insert(&mut self, normaliser: &NameNormaliser, name: &str) {
        let words = plain_words(name);
        if !words.is_empty() {
            self.by_words
                .entry(words)
                .or_default()
                .insert(name.to_owned());
        }
        let key_words = plain_words(&normaliser.key(name));
        if !key_words.is_empty() {
            self.by_key_words
                .entry(key_words)
                .or_default()
                .insert(name.to_owned());
        }
    }

    /// The names whose words appear, in order and together, among `words` (lowercase words of
    /// a question): by their own words, and by their key's words unless `skip_key` says the
    /// name's key must not be matched alone.
    pub fn found_in(&self, words: &[String], skip_key: impl Fn(&str) -> bool) -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        for from in 0..words.len() {
            let mut needle = String::new();
            for word in &words[from..] {
                if !needle.is_empty() {
                    needle.push(' ');
                }
                needle.push_str(word);
                if let Some(names) = self.by_words.get(&needle) {
                    found.extend(names.iter().cloned());
                }
                if let Some(names) = self.by_key_words.get(&needle) {
                    found.extend(names.iter().filter(|n| !skip_key(n)).cloned());
                }
            }
        }
        found
    }
}

/// A value a page states: entity id, predicate, object and the scope it holds in.
type PageSlot = (String, String, String, Scope);

/// What the lexicon reads of a predicate: name, whether a slot, subject types, object type and
/// whether the object is an entity.
type PredicateShape = (String, bool, Vec<String>, String, bool);

impl Derived {
    fn shape(ontology: &Ontology) -> Vec<PredicateShape> {
        ontology
            .predicates()
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    p.kind == PredicateKind::Slot,
                    p.subject_types.clone(),
                    p.object_type.clone(),
                    p.object_is_entity(),
                )
            })
            .collect()
    }

    /// Takes in an entity that is new or only grew (a new name or alias): its names go into
    /// what is derived as a computation would put them. One of no type of its own, whose types
    /// the facts imply, makes everything be computed again instead.
    fn grew(&mut self, normaliser: &NameNormaliser, entity: &Entity) {
        let Some(own) = entity.entity_type.as_deref() else {
            self.clear();
            return;
        };
        let names = || entity.aliases.iter().chain([&entity.name]);
        if let Some((_, lexicon)) = self
            .lexicon
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            let lexicon = Arc::make_mut(lexicon);
            for name in names() {
                lexicon.insert_types(normaliser, name, [own].into_iter());
            }
            lexicon.settle();
        }
        if let Some(needles) = self
            .needles
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .as_mut()
        {
            let needles = Arc::make_mut(needles);
            for name in names() {
                needles.insert(normaliser, name);
            }
        }
    }

    /// Forgets everything derived: the graph changed.
    fn clear(&mut self) {
        *self
            .lexicon
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
        *self
            .needles
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = None;
    }
}

impl Clone for Derived {
    fn clone(&self) -> Self {
        let lexicon = self
            .lexicon
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let needles = self
            .needles
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        Self {
            lexicon: std::sync::Mutex::new(lexicon),
            needles: std::sync::Mutex::new(needles),
        }
    }
}

impl std::fmt::Debug for Derived {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Derived")
    }
}

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
mod tests {
    use super::*;
    use crate::knowledge::ontology::tests::sample;
    use chrono::TimeZone;

    fn at(day: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, day, 9, 0, 0)
            .single()
            .expect("valid date")
    }

    fn page(id: &str, version: u64, origin: &str, body: &str, day: u32) -> PageVersion {
        PageVersion {
            source_id: id.into(),
            version,
            title: id.into(),
            origin: origin.into(),
            body: body.into(),
            updated_at: at(day),
            acl: Vec::new(),
            confidence: 1.0,
            deleted: false,
            effective_from: None,
        }
    }

    fn current<'a>(graph: &'a Graph, entity: &str, predicate: &str) -> Vec<&'a str> {
        values_where(graph, entity, predicate, Fact::is_current)
    }

    /// The values of `predicate` on `entity` of the facts `keep` keeps, sorted.
    fn values_where<'a>(
        graph: &'a Graph,
        entity: &str,
        predicate: &str,
        keep: impl Fn(&Fact) -> bool,
    ) -> Vec<&'a str> {
        let id = graph
            .resolve(entity)
            .map(|e| e.id.clone())
            .unwrap_or_default();
        let mut values: Vec<&str> = graph
            .facts_of(&id)
            .filter(|f| f.predicate == predicate && keep(f))
            .map(|f| f.object.as_str())
            .collect();
        values.sort();
        values
    }

    /// The values of `predicate` on `entity` that hold at `when`.
    fn held_at<'a>(
        graph: &'a Graph,
        entity: &str,
        predicate: &str,
        when: DateTime<Utc>,
    ) -> Vec<&'a str> {
        values_where(graph, entity, predicate, |f| f.valid_at(when))
    }

    #[test]
    fn a_page_version_announced_for_later_holds_from_its_day_and_a_newer_one_cancels_it() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let v1 = page(
            "d1",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            1,
        );
        graph.apply_page(&ontology, &v1, at(1));
        // Published on the 5th, in effect from the 20th.
        let mut v2 = page(
            "d1",
            2,
            "pricing-page",
            "The Gold plan costs €95 per user per month.",
            5,
        );
        v2.effective_from = Some(at(20));
        assert_eq!(v2.effective_at(), at(20));
        graph.apply_page(&ontology, &v2, at(5));
        assert_eq!(held_at(&graph, "Gold plan", "price", at(10)), ["80"]);
        assert_eq!(held_at(&graph, "Gold plan", "price", at(20)), ["95"]);
        // Which version is in effect when, and what a full read reads on the 10th.
        let pages = [v1.clone(), v2.clone()];
        assert_eq!(versions_in_effect(&pages, at(10))[0].version, 1);
        assert_eq!(versions_in_effect(&pages, at(21))[0].version, 2);
        let read: Vec<u64> = versions_to_read(&pages, at(10))
            .iter()
            .map(|p| p.version)
            .collect();
        assert_eq!(read, [1, 2], "in effect first, then the announced one");
        // A correction published on the 8th, in effect at once, states the old price: the
        // announcement is cancelled and the old value holds on past the 20th.
        let v3 = page(
            "d1",
            3,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            8,
        );
        graph.apply_page(&ontology, &v3, at(8));
        assert_eq!(held_at(&graph, "Gold plan", "price", at(10)), ["80"]);
        assert_eq!(held_at(&graph, "Gold plan", "price", at(25)), ["80"]);
        assert!(
            graph
                .facts()
                .iter()
                .filter(|f| f.object == "95")
                .all(|f| f.valid_to == Some(f.valid_from)),
            "the cancelled value never holds: {:?}",
            graph.facts()
        );
        let pages = [v1, v2, v3];
        assert_eq!(versions_in_effect(&pages, at(25))[0].version, 3);
        assert_eq!(
            versions_to_read(&pages, at(10)).len(),
            1,
            "nothing left announced"
        );
        // A rebuild retires the page's facts and reads the page again: the retired facts keep
        // the end the rebuild gave them.
        let mut rebuilt = Graph::new(&ontology);
        let v1 = page(
            "d3",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            1,
        );
        rebuilt.apply_page(&ontology, &v1, at(1));
        rebuilt.retire_page_facts(at(10));
        let mut again = v1.clone();
        again.version = 2;
        rebuilt.apply_page(&ontology, &again, at(10));
        assert_eq!(
            rebuilt.facts()[0].valid_to,
            Some(at(10)),
            "{:?}",
            rebuilt.facts()
        );
        // A version whose effective time is before its capture takes effect at the capture.
        let mut late = page(
            "d2",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            9,
        );
        late.effective_from = Some(at(2));
        assert_eq!(late.effective_at(), at(9));
    }

    #[test]
    fn a_page_is_read_under_its_newest_acl_in_every_version_and_fact() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let v1 = page(
            "d09",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            1,
        );
        graph.apply_page(&ontology, &v1, at(1));
        let fact = graph.facts()[0].clone();
        assert!(fact.acl.is_empty(), "read from a page the tenant may read");
        let mut v2 = page(
            "d09",
            2,
            "pricing-page",
            "The Gold plan costs €95 per user per month.",
            5,
        );
        v2.acl = vec!["cfo".to_owned()];
        let latest = BTreeMap::from([("d09".to_owned(), v2.clone())]);
        let bob = Caller::new("t", "bob").expect("caller");
        let cfo = Caller::new("t", "cfo").expect("caller");
        let narrowed = Access::new(&bob, &latest);
        assert!(
            !narrowed.fact(&fact),
            "a narrowed page narrows its old facts"
        );
        assert!(!narrowed.page(&v1) && !narrowed.page(&v2));
        assert!(!narrowed.source("d09"));
        let cfo_access = Access::new(&cfo, &latest);
        assert!(cfo_access.fact(&fact) && cfo_access.page(&v1) && cfo_access.page(&v2));
        // A group of the token admits its members, and only them.
        let mut v3 = v2.clone();
        v3.version = 3;
        v3.acl = vec!["finance".to_owned()];
        let latest = BTreeMap::from([("d09".to_owned(), v3.clone())]);
        assert!(!Access::new(&bob, &latest).fact(&fact));
        let in_finance = bob.clone().with_groups(["finance".to_owned()]);
        let finance = Access::new(&in_finance, &latest);
        assert!(finance.fact(&fact) && finance.page(&v3));
        assert!(!finance.page(&v2), "v2's own ACL names cfo only");
        // Widening the page does not open what a narrower version said.
        let mut secret = fact.clone();
        secret.acl = vec!["cfo".to_owned()];
        let mut v4 = v3.clone();
        v4.version = 4;
        v4.acl = Vec::new();
        let latest = BTreeMap::from([("d09".to_owned(), v4.clone())]);
        assert!(!Access::new(&bob, &latest).fact(&secret));
        assert!(Access::new(&bob, &latest).page(&v4));
        // A record source is no page: the fact's own ACL decides.
        let mut record = fact;
        record.source.source_id = "record:billing".to_owned();
        assert!(Access::new(&bob, &latest).fact(&record));
    }

    #[test]
    fn an_entity_only_hidden_facts_name_is_unknown_to_the_caller() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let public = page(
            "d10",
            1,
            "pricing-page",
            "The Gold plan costs €80 per user per month.",
            1,
        );
        let mut secret = page(
            "d11",
            1,
            "pricing-page",
            "The Onyx plan costs €400 per user per month.",
            2,
        );
        secret.acl = vec!["cfo".to_owned()];
        graph.apply_page(&ontology, &public, at(1));
        graph.apply_page(&ontology, &secret, at(2));
        let latest = BTreeMap::from([
            ("d10".to_owned(), public.clone()),
            ("d11".to_owned(), secret.clone()),
        ]);
        let cfo = Caller::new("t", "cfo").expect("caller");
        assert!(
            graph.visible_to(&Access::new(&cfo, &latest)).is_none(),
            "a caller every fact admits sees the whole graph"
        );
        let bob = Caller::new("t", "bob").expect("caller");
        let seen = graph
            .visible_to(&Access::new(&bob, &latest))
            .expect("bob sees less");
        assert!(graph.resolve("Onyx plan").is_some());
        assert!(
            seen.resolve("Onyx plan").is_none(),
            "hidden entity resolved"
        );
        assert!(seen.resolve("Gold plan").is_some());
        assert_eq!(current(&seen, "Gold plan", "price"), vec!["80"]);
        assert!(seen.facts().iter().all(|f| f.source.source_id == "d10"));
    }

    #[test]
    fn a_new_version_supersedes_only_what_changed() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let v1 = page(
            "d02",
            1,
            "pricing-page",
            "The Pro plan costs €49 per user per month. The Starter plan costs €19 per user per month.",
            1,
        );
        graph.apply_page(&ontology, &v1, at(1));
        let v2 = page(
            "d02",
            2,
            "pricing-page",
            "The Pro plan costs €59 per user per month. The Starter plan costs €19 per user per month.",
            22,
        );
        let changes = graph.apply_page(&ontology, &v2, at(22));
        assert_eq!(changes.writes, 2, "one superseded, one added");
        assert_eq!(current(&graph, "Pro plan", "price"), vec!["59"]);
        let starter: Vec<_> = graph.facts().iter().filter(|f| f.object == "19").collect();
        assert_eq!(starter.len(), 1);
        assert_eq!(
            starter[0].source.version, 1,
            "unchanged fact keeps its provenance"
        );
        assert_eq!(starter[0].seen_version, 2);
        let old = graph
            .facts()
            .iter()
            .find(|f| f.object == "49")
            .expect("history is kept");
        assert_eq!(old.valid_to, Some(at(22)));
        let pro = graph.resolve("pro").expect("pro").id.clone();
        assert_eq!(
            graph
                .slot_at(&pro, "price", at(10))
                .map(|f| f.object.as_str())
                .collect::<Vec<_>>(),
            vec!["49"],
            "as of before the change"
        );
    }

    #[test]
    fn a_tombstone_ends_every_fact_of_its_page_and_as_of_before_still_sees_them() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let v1 = page(
            "d03",
            1,
            "pricing-page",
            "The Pro plan costs €49 per user per month. The Starter plan costs €19 per user per month.",
            1,
        );
        graph.apply_page(&ontology, &v1, at(1));
        let other = page(
            "d04",
            1,
            "wiki",
            "The Team plan costs €29 per user per month.",
            2,
        );
        graph.apply_page(&ontology, &other, at(2));
        let tombstone = PageVersion::tombstone(&v1, at(20));
        assert!(tombstone.deleted && tombstone.body.is_empty());
        assert_eq!(
            (tombstone.version, tombstone.acl.clone()),
            (2, v1.acl.clone())
        );
        let changes = graph.apply_page(&ontology, &tombstone, at(20));
        assert_eq!(changes.writes, 2, "both facts of the page end");
        assert!(current(&graph, "Pro plan", "price").is_empty());
        assert!(current(&graph, "Starter plan", "price").is_empty());
        assert_eq!(
            current(&graph, "Team plan", "price"),
            vec!["29"],
            "other pages stay"
        );
        let pro = graph.resolve("pro").expect("pro").id.clone();
        assert_eq!(
            graph
                .slot_at(&pro, "price", at(10))
                .map(|f| f.object.as_str())
                .collect::<Vec<_>>(),
            vec!["49"],
            "as of before the deletion"
        );
        assert_eq!(graph.slot_at(&pro, "price", at(21)).count(), 0);
        // The page comes back with a new version: its facts are read again.
        let v3 = page(
            "d03",
            3,
            "pricing-page",
            "The Pro plan costs €52 per user per month.",
            25,
        );
        graph.apply_page(&ontology, &v3, at(25));
        assert_eq!(current(&graph, "Pro plan", "price"), vec!["52"]);
    }

    #[test]
    fn a_rename_keeps_the_old_name_and_merges_a_node_made_under_the_new_one() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        graph.apply_page(
            &ontology,
            &page(
                "d06",
                1,
                "product-page",
                "Tessaly Track is owned by the Helix team.",
                1,
            ),
            at(1),
        );
        graph.apply_page(
            &ontology,
            &page(
                "d16",
                1,
                "faq",
                "Tessaly Beacon is included in the Starter plan.",
                2,
            ),
            at(2),
        );
        assert_ne!(
            graph.resolve("Tessaly Track").map(|e| &e.id),
            graph.resolve("Tessaly Beacon").map(|e| &e.id)
        );
        let before_rename = graph.facts().to_vec();
        let mut changes = Changes::default();
        graph.rename("Tessaly Track", "Tessaly Beacon", &mut changes);
        let track = graph
            .resolve("Tessaly Track")
            .expect("old name still resolves");
        assert_eq!(track.name, "Tessaly Beacon");
        assert_eq!(
            graph.resolve("tessaly beacon").map(|e| &e.id),
            Some(&track.id)
        );
        assert_eq!(
            current(&graph, "Tessaly Track", "included_in"),
            vec!["Starter"]
        );
        assert_eq!(changes.merged.len(), 1);
        each_entity_lists_its_facts(&graph);
        // A reader's copy patched with what the rename wrote (facts moved to another entity)
        // lists them alike.
        let mut patched = Graph::new(&ontology);
        patched.patch(&[], Vec::new(), before_rename);
        patched.patch(&[], Vec::new(), graph.facts().to_vec());
        each_entity_lists_its_facts(&patched);
    }

    /// `facts_of` gives every entity's facts as a scan of every fact would, in id order.
    fn each_entity_lists_its_facts(graph: &Graph) {
        let mut entities: BTreeSet<&str> =
            graph.facts().iter().map(|f| f.entity.as_str()).collect();
        entities.extend(graph.by_entity.keys().map(String::as_str));
        for entity in entities {
            let listed: Vec<u64> = graph.facts_of(entity).map(|f| f.id).collect();
            let scanned: Vec<u64> = graph
                .facts()
                .iter()
                .filter(|f| f.entity == entity)
                .map(|f| f.id)
                .collect();
            assert_eq!(listed, scanned, "facts of {entity}");
        }
    }

    #[test]
    fn a_record_supersedes_every_spelling_of_its_slot() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        graph.apply_page(
            &ontology,
            &page(
                "d02",
                1,
                "pricing-page",
                "The Pro plan costs €49 per user per month.",
                1,
            ),
            at(1),
        );
        graph.apply_page(
            &ontology,
            &page(
                "d15",
                1,
                "faq",
                "The pro plan costs €49 per user per month.",
                1,
            ),
            at(1),
        );
        graph.apply_record(
            &ontology,
            &RecordValue {
                source: "record:billing",
                sequence: 7,
                entity: "Pro",
                predicate: "price",
                value: "59",
                at: at(22),
                effective_from: None,
                scope: &Scope::everywhere(),
            },
        );
        assert_eq!(current(&graph, "PRO plan", "price"), vec!["59"]);
        let record = graph
            .facts()
            .iter()
            .find(|f| f.is_current())
            .expect("record fact");
        assert_eq!(record.authority, 4);
        assert_eq!(record.source.origin, RECORD_ORIGIN);
        assert_eq!(record_origin("registry:missions"), "registry");
        assert_eq!(record_origin("cmdb"), RECORD_ORIGIN);
    }

    fn valid_values(graph: &Graph, day: u32) -> Vec<&str> {
        let mut values: Vec<&str> = graph
            .facts()
            .iter()
            .filter(|f| f.predicate == "price" && f.valid_at(at(day)))
            .map(|f| f.object.as_str())
            .collect();
        values.sort();
        values
    }

    #[test]
    fn a_record_value_announced_for_later_holds_from_its_time_and_is_not_cancelled_meanwhile() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let set = |graph: &mut Graph, seq, value, day, effective: Option<u32>| {
            graph.apply_record(
                &ontology,
                &RecordValue {
                    source: "record:billing",
                    sequence: seq,
                    entity: "Pro",
                    predicate: "price",
                    value,
                    at: at(day),
                    effective_from: effective.map(at),
                    scope: &Scope::everywhere(),
                },
            );
        };
        set(&mut graph, 1, "59", 2, None);
        // Announced on day 3 for day 10.
        set(&mut graph, 2, "69", 3, Some(10));
        assert_eq!(valid_values(&graph, 4), vec!["59"]);
        assert_eq!(valid_values(&graph, 10), vec!["69"]);
        // A value recorded on day 5 for now holds until the announced one takes over.
        set(&mut graph, 3, "64", 5, None);
        assert_eq!(valid_values(&graph, 4), vec!["59"]);
        assert_eq!(valid_values(&graph, 6), vec!["64"]);
        assert_eq!(valid_values(&graph, 12), vec!["69"]);
        // An effective time before the event's own is the event's time: never retroactive.
        set(&mut graph, 4, "61", 14, Some(1));
        assert_eq!(valid_values(&graph, 12), vec!["69"]);
        assert_eq!(valid_values(&graph, 14), vec!["61"]);
        // A second announcement for the same instant replaces the first.
        set(&mut graph, 5, "70", 15, Some(20));
        set(&mut graph, 6, "72", 16, Some(20));
        assert_eq!(valid_values(&graph, 19), vec!["61"]);
        assert_eq!(valid_values(&graph, 21), vec!["72"]);
        // A rebuild retires page facts only: a record of a system whose source names its own
        // origin stays, and so does the schedule.
        graph.apply_record(
            &ontology,
            &RecordValue {
                source: "registry:plans",
                sequence: 7,
                entity: "Team",
                predicate: "price",
                value: "30",
                at: at(17),
                effective_from: None,
                scope: &Scope::everywhere(),
            },
        );
        graph.retire_page_facts(at(18));
        assert_eq!(valid_values(&graph, 19), vec!["30", "61"]);
        assert_eq!(valid_values(&graph, 21), vec!["30", "72"]);
    }

    /// Every name and the types the lexicon gives it, shared and added parts together.
    fn entries(lexicon: &Lexicon, graph: &Graph) -> Vec<(String, Vec<String>)> {
        graph
            .entities()
            .flat_map(|e| e.aliases.iter().chain([&e.name]))
            .map(|name| {
                let types = lexicon
                    .types_of(graph.normaliser(), name)
                    .map(|t| t.iter().cloned().collect())
                    .unwrap_or_default();
                (name.clone(), types)
            })
            .collect()
    }

    #[test]
    fn the_lexicon_and_needles_kept_through_changes_equal_ones_computed_afresh() {
        let ontology = sample();
        let mut graph = Graph::new(&ontology);
        let products = ["Ledger", "Beacon", "Atlas Reports", "Kite"];
        let teams = ["Payments", "Growth", "Core"];
        let plans = ["Pro", "Team", "Starter"];
        let mut seed: u64 = 17;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) as usize % n
        };
        let mut versions: BTreeMap<String, u64> = BTreeMap::new();
        for step in 0..300u32 {
            let day = 1 + step % 27;
            match next(10) {
                0..=5 => {
                    // Now and then another spelling: a new alias of a known entity.
                    let product = match products[next(products.len())] {
                        name if next(3) == 0 => name.to_uppercase(),
                        name => name.to_owned(),
                    };
                    let body = match next(4) {
                        0 => format!("{product} is owned by the {} team.", teams[next(3)]),
                        1 => format!("The {} team is led by Dana {}.", teams[next(3)], next(5)),
                        2 => format!("{product} is included in the {} plan.", plans[next(3)]),
                        _ => format!(
                            "The {} plan costs €{} per user per month.",
                            plans[next(3)],
                            10 + next(50)
                        ),
                    };
                    let id = format!("page-{}", next(6));
                    let version = versions.entry(id.clone()).or_default();
                    *version += 1;
                    graph.apply_page(&ontology, &page(&id, *version, "wiki", &body, day), at(day));
                }
                6 | 7 => {
                    graph.apply_record(
                        &ontology,
                        &RecordValue {
                            source: "crm",
                            sequence: u64::from(step),
                            entity: products[next(products.len())],
                            predicate: "owned_by",
                            value: teams[next(3)],
                            at: at(day),
                            effective_from: None,
                            scope: &Scope::everywhere(),
                        },
                    );
                }
                8 => {
                    let (old, new) = (products[next(4)], format!("{} Next", products[next(4)]));
                    graph.rename(old, &new, &mut Changes::default());
                }
                _ => {
                    if next(4) == 0 {
                        graph.retire_page_facts(at(day));
                    } else {
                        // Asked between changes, as readers do: the kept views are then updated
                        // in place by the next change instead of computed again.
                        graph.lexicon(&ontology);
                        graph.needles();
                    }
                }
            }
            let kept = graph.lexicon(&ontology);
            let fresh = graph.compute_lexicon(&ontology);
            assert_eq!(
                entries(&kept, &graph),
                entries(&fresh, &graph),
                "lexicon after step {step}"
            );
            assert_eq!(kept.len(), fresh.len(), "lexicon size after step {step}");
            assert_eq!(
                *graph.needles(),
                graph.compute_needles(),
                "needles after step {step}"
            );
        }
    }
}
