//! What a folder's earlier runs read, so a re-run reads only what may have changed: per page its
//! origin, the hashes of its title and body, and the file's size and modification time when it
//! was read (a file whose size and time are unchanged is not read again); in `--git` mode the
//! last commit pushed.
//!
//! Whether a page is pushed is decided against the store, not this file: a folder run lists the
//! pages the tenant holds with their hashes (the analyst's `ListPages`) and pushes a file only
//! when its origin, title or body differs from what the store keeps. This file is a cache of
//! what was read; an entry counts only while the store holds the same hashes, and a lost file
//! costs reading every file again, never a push of an unchanged one.
//!
//! A JSON file, by default `.ontoloop/ingest-TENANT.json` inside the folder, written whole
//! through a temporary file and a rename.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ontoloop_store::content_hash;
use serde::{Deserialize, Serialize};

/// The state file's format version (1 kept one hash of origin, title and body; its pages are
/// read again).
const VERSION: u32 = 2;

/// A modification time within this of the moment the file was read could be followed by a
/// change in the same clock tick, so it is not trusted to skip reading (git's "racy" entries).
const RACY_NS: u64 = 2_000_000_000;

/// What earlier runs pushed.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct State {
    /// Format version.
    #[serde(default)]
    pub version: u32,
    /// `--git`: the last commit whose changes were all pushed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git_head: Option<String>,
    /// Pages pushed, by page id.
    #[serde(default)]
    pub pages: BTreeMap<String, Entry>,
}

/// One page pushed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// Its origin.
    pub origin: String,
    /// Hex SHA-256 of its body, as the store keeps it ([`content_hash`]).
    pub content_hash: String,
    /// Hex SHA-256 of its title, as `ListPages` lists it.
    pub title_hash: String,
    /// The file's size when read.
    #[serde(default)]
    pub size: u64,
    /// The file's modification time when read, nanoseconds since the Unix epoch.
    #[serde(default)]
    pub mtime_ns: u64,
    /// When the file was read, nanoseconds since the Unix epoch.
    #[serde(default)]
    pub read_ns: u64,
}

impl Entry {
    /// The entry of a page of `origin`, `title` and `body`, read from a file of `size` bytes
    /// modified at `mtime_ns` (0: no file) at `read_ns`.
    pub fn new(
        origin: String,
        title: &str,
        body: &str,
        size: u64,
        mtime_ns: u64,
        read_ns: u64,
    ) -> Self {
        Self {
            origin,
            content_hash: content_hash(body),
            title_hash: content_hash(title),
            size,
            mtime_ns,
            read_ns,
        }
    }

    /// What the store holds of a page: its origin and hashes, no file read.
    pub fn stored(origin: String, content_hash: String, title_hash: String) -> Self {
        Self {
            origin,
            content_hash,
            title_hash,
            size: 0,
            mtime_ns: 0,
            read_ns: 0,
        }
    }

    /// Whether the two are the same page: origin, title and body.
    pub fn same_page(&self, other: &Entry) -> bool {
        self.origin == other.origin
            && self.content_hash == other.content_hash
            && self.title_hash == other.title_hash
    }

    /// Whether a file of `size` bytes modified at `mtime_ns` is the one read then, without
    /// reading it: same size and time, and that time well before the read.
    pub fn unchanged(&self, size: u64, mtime_ns: u64) -> bool {
        mtime_ns != 0
            && self.size == size
            && self.mtime_ns == mtime_ns
            && mtime_ns.saturating_add(RACY_NS) < self.read_ns
    }
}

impl State {
    /// The state at `path`; an empty one when there is no file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
        };
        let mut state: State = serde_json::from_str(&text).with_context(|| {
            format!(
                "read {} (delete it, or pass --full to push everything again)",
                path.display()
            )
        })?;
        anyhow::ensure!(
            state.version <= VERSION,
            "{} was written by a newer ontoloop (format {})",
            path.display(),
            state.version
        );
        if state.version < VERSION {
            // Hashed otherwise: its files are read again (pushed only if the store differs).
            state.pages.clear();
        }
        Ok(state)
    }

    /// Writes the state to `path`, creating its folder.
    pub fn save(&mut self, path: &Path) -> anyhow::Result<()> {
        self.version = VERSION;
        let hint = " (keep the state elsewhere with --state FILE)";
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("create {}{hint}", dir.display()))?;
        }
        let mut tmp = path.as_os_str().to_owned();
        tmp.push(".tmp");
        let tmp = PathBuf::from(tmp);
        let text = serde_json::to_vec(self).context("encode the ingest state")?;
        std::fs::write(&tmp, text).with_context(|| format!("write {}{hint}", tmp.display()))?;
        std::fs::rename(&tmp, path).with_context(|| format!("write {}{hint}", path.display()))
    }
}

/// Where the state of `tenant`'s runs over `root` lives by default.
pub fn default_path(root: &Path, tenant: &str) -> PathBuf {
    let safe: String = tenant
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    root.join(".ontoloop").join(format!("ingest-{safe}.json"))
}

/// Now, nanoseconds since the Unix epoch.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_survives_a_save_and_a_load() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = default_path(dir.path(), "acme/corp");
        assert!(path.ends_with(".ontoloop/ingest-acme_corp.json"));
        assert!(State::load(&path).expect("no file").pages.is_empty());
        let mut state = State::default();
        state.pages.insert(
            "a.md".into(),
            Entry::new("docs".into(), "A", "body", 4, 1, 2),
        );
        state.git_head = Some("abc".into());
        state.save(&path).expect("save");
        let loaded = State::load(&path).expect("load");
        assert_eq!(loaded.pages, state.pages);
        assert_eq!(loaded.git_head.as_deref(), Some("abc"));
        std::fs::write(&path, "{not json").expect("write");
        let err = State::load(&path).expect_err("corrupt");
        assert!(format!("{err:#}").contains("--full"), "{err:#}");
    }

    #[test]
    fn only_a_file_read_well_after_its_last_change_is_trusted_unread() {
        let entry = Entry::new("docs".into(), "A", "body", 10, 1_000_000_000, 5_000_000_000);
        assert!(entry.unchanged(10, 1_000_000_000));
        assert!(!entry.unchanged(11, 1_000_000_000));
        assert!(!entry.unchanged(10, 1_000_000_001));
        let racy = Entry {
            read_ns: 2_500_000_000,
            ..entry.clone()
        };
        assert!(!racy.unchanged(10, 1_000_000_000));
        // What the store holds is never trusted unread: it names no file.
        let stored = Entry::stored("docs".into(), content_hash("body"), content_hash("A"));
        assert!(stored.same_page(&entry));
        assert!(!stored.unchanged(0, 0));
        let moved = Entry::stored("wiki".into(), content_hash("body"), content_hash("A"));
        assert!(!moved.same_page(&entry));
    }
}
