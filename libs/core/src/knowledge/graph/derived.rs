//! What the graph derives from the whole of itself for reading it — the lexicon and the name
//! needles — kept until the graph changes.

use std::sync::Arc;

use super::{Entity, NameNeedles};
use crate::knowledge::names::NameNormaliser;
use crate::knowledge::ontology::{Ontology, PredicateKind};
use crate::knowledge::semantic::Lexicon;

/// What is derived from the whole graph for reading it — the lexicon (with the shape of the
/// ontology it was computed for: what of each predicate it reads) and the name needles — kept
/// until the graph changes, so every question asked of one state of the graph shares them.
#[derive(Default)]
pub(super) struct Derived {
    pub(super) lexicon: std::sync::Mutex<Option<(Vec<PredicateShape>, Arc<Lexicon>)>>,
    pub(super) needles: std::sync::Mutex<Option<Arc<NameNeedles>>>,
}

/// What the lexicon reads of a predicate: name, whether a slot, subject types, object type and
/// whether the object is an entity.
pub(super) type PredicateShape = (String, bool, Vec<String>, String, bool);

impl Derived {
    pub(super) fn shape(ontology: &Ontology) -> Vec<PredicateShape> {
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
    pub(super) fn grew(&mut self, normaliser: &NameNormaliser, entity: &Entity) {
        let Some(own) = entity.entity_type.as_deref() else {
            self.clear();
            return;
        };
        let names = || entity.aliases.iter().chain([&entity.name]);
        if let Some((_, lexicon)) = held(&mut self.lexicon) {
            let lexicon = Arc::make_mut(lexicon);
            for name in names() {
                lexicon.insert_types(normaliser, name, [own].into_iter());
            }
            lexicon.settle();
        }
        if let Some(needles) = held(&mut self.needles) {
            let needles = Arc::make_mut(needles);
            for name in names() {
                needles.insert(normaliser, name);
            }
        }
    }

    /// Forgets everything derived: the graph changed.
    pub(super) fn clear(&mut self) {
        *held(&mut self.lexicon) = None;
        *held(&mut self.needles) = None;
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

/// What a cache slot holds, reached through `&mut` without locking; a poisoned slot's value is
/// taken as it is (every write to a slot is a whole value).
fn held<T>(slot: &mut std::sync::Mutex<T>) -> &mut T {
    slot.get_mut()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
