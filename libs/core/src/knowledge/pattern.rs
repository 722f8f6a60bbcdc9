//! Sentence patterns: `{s}` the subject, `{o}` the object, `{o:number}` a numeric object.
//!
//! A pattern matches one whole sentence, exactly apart from surrounding white space. A bare slot
//! takes the shortest non-empty text that lets the rest of the sentence match; a number slot takes
//! digits with an optional decimal part.

/// Which slot a piece of a pattern fills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// `{s}`
    Subject,
    /// `{o}`
    Object,
    /// `{o:number}`
    ObjectNumber,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Slot(Slot),
}

/// A compiled pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern {
    source: String,
    pieces: Vec<Piece>,
}

/// A pattern that cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// A `{` without a closing `}`.
    #[error("unclosed slot in pattern {0:?}")]
    Unclosed(String),
    /// A slot name other than `s`, `o` or `o:number`.
    #[error("unknown slot {{{slot}}} in pattern {pattern:?} (use {{s}}, {{o}} or {{o:number}})")]
    UnknownSlot {
        /// The slot as written.
        slot: String,
        /// The pattern.
        pattern: String,
    },
    /// Two slots with nothing between them cannot be told apart.
    #[error("adjacent slots in pattern {0:?}")]
    AdjacentSlots(String),
    /// The object slot is missing or appears twice, or the subject appears twice.
    #[error("pattern {0:?} needs exactly one object slot and at most one subject slot")]
    SlotCount(String),
}

/// What a pattern matched in a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// The subject text, when the pattern has `{s}`.
    pub subject: Option<String>,
    /// The object text.
    pub object: String,
}

impl Pattern {
    /// Compiles `source`.
    pub fn compile(source: &str) -> Result<Self, PatternError> {
        let mut pieces = Vec::new();
        let mut literal = String::new();
        let mut rest = source.trim();
        while let Some(open) = rest.find('{') {
            literal.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            let close = after
                .find('}')
                .ok_or_else(|| PatternError::Unclosed(source.to_owned()))?;
            let slot = match &after[..close] {
                "s" => Slot::Subject,
                "o" => Slot::Object,
                "o:number" => Slot::ObjectNumber,
                other => {
                    return Err(PatternError::UnknownSlot {
                        slot: other.to_owned(),
                        pattern: source.to_owned(),
                    });
                }
            };
            if literal.is_empty() && matches!(pieces.last(), Some(Piece::Slot(_))) {
                return Err(PatternError::AdjacentSlots(source.to_owned()));
            }
            if !literal.is_empty() {
                pieces.push(Piece::Literal(std::mem::take(&mut literal)));
            }
            pieces.push(Piece::Slot(slot));
            rest = &after[close + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            pieces.push(Piece::Literal(literal));
        }
        let count = |wanted: &[Slot]| {
            pieces
                .iter()
                .filter(|p| matches!(p, Piece::Slot(s) if wanted.contains(s)))
                .count()
        };
        if count(&[Slot::Object, Slot::ObjectNumber]) != 1 || count(&[Slot::Subject]) > 1 {
            return Err(PatternError::SlotCount(source.to_owned()));
        }
        Ok(Self {
            source: source.to_owned(),
            pieces,
        })
    }

    /// The pattern as written.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the pattern has a subject slot.
    pub fn has_subject(&self) -> bool {
        self.pieces
            .iter()
            .any(|p| matches!(p, Piece::Slot(Slot::Subject)))
    }

    /// The literal words of the pattern, for mapping questions to predicates.
    pub fn literal_text(&self) -> String {
        self.pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Literal(text) => Some(text.as_str()),
                Piece::Slot(_) => None,
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Matches one sentence (surrounding white space ignored).
    pub fn matches(&self, sentence: &str) -> Option<Match> {
        let sentence = sentence.trim();
        // A sentence the pattern fits holds each of its literals: most sentences are refused
        // by a substring search instead of by trying every end of the first slot.
        let literals_held = self.pieces.iter().all(|piece| match piece {
            Piece::Literal(literal) => sentence.contains(literal.as_str()),
            Piece::Slot(_) => true,
        });
        if !literals_held {
            return None;
        }
        let mut found = Vec::new();
        if match_from(&self.pieces, sentence, &mut found) {
            let mut subject = None;
            let mut object = None;
            for (slot, value) in found {
                match slot {
                    Slot::Subject => subject = Some(value.to_owned()),
                    Slot::Object | Slot::ObjectNumber => object = Some(value.to_owned()),
                }
            }
            return object.map(|object| Match { subject, object });
        }
        None
    }
}

/// Matches `pieces` against the whole of `text`, pushing each slot's value (a part of `text`)
/// on `found`. A bare slot tries its ends shortest first, and only ends the next piece can follow
/// from: the end of the text for the last piece, a place the next literal starts at otherwise.
fn match_from<'t>(pieces: &[Piece], text: &'t str, found: &mut Vec<(Slot, &'t str)>) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return text.is_empty();
    };
    match first {
        Piece::Literal(literal) => text
            .strip_prefix(literal.as_str())
            .is_some_and(|after| match_from(rest, after, found)),
        Piece::Slot(slot) => {
            let mut ends_at = |end: usize| {
                let value = text[..end].trim();
                if value.is_empty() {
                    return false;
                }
                found.push((*slot, value));
                if match_from(rest, &text[end..], found) {
                    return true;
                }
                found.pop();
                false
            };
            match slot {
                Slot::ObjectNumber => number_ends(text).into_iter().any(ends_at),
                Slot::Subject | Slot::Object => text
                    .char_indices()
                    .map(|(i, c)| i + c.len_utf8())
                    .filter(|&end| match rest.first() {
                        None => end == text.len(),
                        Some(Piece::Literal(literal)) => text[end..].starts_with(literal.as_str()),
                        Some(Piece::Slot(_)) => true,
                    })
                    .any(&mut ends_at),
            }
        }
    }
}

/// Ends of the numbers at the start of `text`, longest first: `99.95` gives 5, 2.
fn number_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return Vec::new();
    }
    let mut ends = vec![digits];
    if bytes.get(digits) == Some(&b'.') {
        let fraction = bytes[digits + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if fraction > 0 {
            ends.insert(0, digits + 1 + fraction);
        }
    }
    ends
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, sentence: &str) -> Option<Match> {
        Pattern::compile(pattern)
            .expect("compiles")
            .matches(sentence)
    }

    #[test]
    fn numbers_and_subjects() {
        let found = m(
            "The {s} plan costs €{o:number} per user per month.",
            " The Pro plan costs €49 per user per month. ",
        )
        .expect("matches");
        assert_eq!(found.subject.as_deref(), Some("Pro"));
        assert_eq!(found.object, "49");
        let found = m(
            "The {s} plan comes with a {o:number}% uptime SLA.",
            "The Enterprise plan comes with a 99.95% uptime SLA.",
        )
        .expect("matches");
        assert_eq!(found.object, "99.95");
    }

    #[test]
    fn a_bare_slot_takes_the_shortest_text_that_completes_the_sentence() {
        let found = m(
            "{s} is owned by the {o} team.",
            "Payments service is owned by the Atlas team.",
        )
        .expect("matches");
        assert_eq!(found.subject.as_deref(), Some("Payments service"));
        assert_eq!(found.object, "Atlas");
        let found = m(
            "{s} is our {o}.",
            "Tessaly Dock is our warehouse slotting tool.",
        )
        .expect("matches");
        assert_eq!(found.object, "warehouse slotting tool");
    }

    #[test]
    fn fixed_subject_patterns_have_no_subject() {
        let found = m(
            "Customers can request a refund within {o:number} days of purchase.",
            "Customers can request a refund within 14 days of purchase.",
        )
        .expect("matches");
        assert_eq!(found.subject, None);
        assert_eq!(found.object, "14");
    }

    #[test]
    fn anything_else_does_not_match() {
        assert_eq!(
            m(
                "The {s} plan costs €{o:number} per user per month.",
                "The Pro plan costs about €49 per user per month."
            ),
            None
        );
        assert_eq!(
            m(
                "The {s} plan costs €{o:number} per user per month.",
                "The Pro plan costs €49 per user per month, billed yearly."
            ),
            None
        );
        assert_eq!(m("{s} is our {o}.", "It is our app"), None);
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(matches!(
            Pattern::compile("{s} costs {x}."),
            Err(PatternError::UnknownSlot { .. })
        ));
        assert!(matches!(
            Pattern::compile("{s}{o}."),
            Err(PatternError::AdjacentSlots(_))
        ));
        assert!(matches!(
            Pattern::compile("{s} costs."),
            Err(PatternError::SlotCount(_))
        ));
        assert!(matches!(
            Pattern::compile("{s costs {o}."),
            Err(PatternError::UnknownSlot { .. }) | Err(PatternError::Unclosed(_))
        ));
    }
}
