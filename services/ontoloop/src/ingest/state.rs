//! What a folder's earlier runs pushed, so a re-run pushes only what changed: per page its
//! origin, the hash of what was pushed (origin, title and body), and the file's size and
//! modification time when it was read (a file whose size and time are unchanged is not read
//! again); in `--git` mode the last commit pushed.
//!
//! A JSON file, by default `.ontoloop/ingest-TENANT.json` inside the folder, written whole
//! through a temporary file and a rename. The store keeps a content hash per page version too
//! (and makes no new version of an unchanged body), so a lost state file costs a re-push of
//! everything, not a duplicate version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The state file's format version.
const VERSION: u32 = 1;

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
    /// [`hash`] of what was pushed.
    pub hash: String,
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
        let state: State = serde_json::from_str(&text).with_context(|| {
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

/// The hash of a page as pushed: its origin, title and body.
pub fn hash(origin: &str, title: &str, body: &str) -> String {
    let mut sha = Sha256::new();
    for part in [origin, title, body] {
        sha.update((part.len() as u64).to_le_bytes());
        sha.update(part.as_bytes());
    }
    sha.finalize().iter().map(|b| format!("{b:02x}")).collect()
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
            Entry {
                origin: "docs".into(),
                hash: hash("docs", "A", "body"),
                size: 4,
                mtime_ns: 1,
                read_ns: 2,
            },
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
        let entry = Entry {
            origin: "docs".into(),
            hash: String::new(),
            size: 10,
            mtime_ns: 1_000_000_000,
            read_ns: 5_000_000_000,
        };
        assert!(entry.unchanged(10, 1_000_000_000));
        assert!(!entry.unchanged(11, 1_000_000_000));
        assert!(!entry.unchanged(10, 1_000_000_001));
        let racy = Entry {
            read_ns: 2_500_000_000,
            ..entry
        };
        assert!(!racy.unchanged(10, 1_000_000_000));
        assert_ne!(hash("a", "bc", ""), hash("ab", "c", ""));
    }
}
