//! The files of a folder, and what each one's page is: its id (the path relative to the folder,
//! `/`-separated) and its origin. Bounded: at most `max_files` files are looked at, a file over
//! `max_file_bytes` is not read, symbolic links are followed only to files inside the folder.
//! Hidden entries (a name starting with `.`: `.git`, `.ontoloop`) are not read, and nothing is
//! skipped without being counted or listed with its reason.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use anyhow::Context as _;
use ontoloop_core::events::MAX_NAME_BYTES;

use super::formats::{self, Format};

/// What bounds a run.
#[derive(Debug, Clone)]
pub struct Limits {
    /// A larger file is refused unread.
    pub max_file_bytes: u64,
    /// More files than this under the folder end the run before anything is pushed.
    pub max_files: usize,
    /// A page's text longer than this is refused (an event carries the whole body).
    pub max_body_bytes: usize,
    /// The largest event the services take (`services.max_message_bytes`).
    pub max_event_bytes: usize,
}

impl Limits {
    /// Room an event needs beside its body (ids, title, origin, caller).
    const ENVELOPE_BYTES: usize = 64 * 1024;

    /// Limits of `max_file_bytes` and `max_files`, for services that take events of at most
    /// `max_event_bytes`.
    pub fn new(max_file_bytes: u64, max_files: usize, max_event_bytes: usize) -> Self {
        Self {
            max_file_bytes,
            max_files,
            max_body_bytes: max_event_bytes.saturating_sub(Self::ENVELOPE_BYTES),
            max_event_bytes,
        }
    }
}

/// Which origin a page gets: the origin of the longest folder prefix mapped, else the default.
#[derive(Debug, Clone)]
pub struct Origins {
    default: String,
    /// (folder relative to the root without a trailing `/`, origin), longest folder first.
    map: Vec<(String, String)>,
}

impl Origins {
    /// `default` for every page but those under a folder of `map` (`sub/dir`, relative to the
    /// folder ingested), which get that folder's origin.
    pub fn new(default: &str, map: &[(String, String)]) -> anyhow::Result<Self> {
        let check = |origin: &str| {
            anyhow::ensure!(
                !origin.trim().is_empty() && origin.len() <= MAX_NAME_BYTES,
                "an origin is a non-empty name of at most {MAX_NAME_BYTES} bytes: {origin:?}"
            );
            Ok(())
        };
        check(default)?;
        let mut mapped = Vec::new();
        for (dir, origin) in map {
            check(origin)?;
            let dir = dir.trim_start_matches("./").trim_matches('/').to_owned();
            anyhow::ensure!(
                !dir.is_empty() && !dir.split('/').any(|part| part == ".."),
                "--origin-map wants a folder inside the one ingested: {dir:?}"
            );
            mapped.push((dir, origin.clone()));
        }
        mapped.sort_by_key(|(dir, _)| std::cmp::Reverse(dir.len()));
        Ok(Self {
            default: default.to_owned(),
            map: mapped,
        })
    }

    /// The origin of the page `id`.
    pub fn of(&self, id: &str) -> &str {
        self.map
            .iter()
            .find(|(dir, _)| {
                id.strip_prefix(dir.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
            .map_or(&self.default, |(_, origin)| origin)
    }

    /// Every origin a page can get.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.default.as_str()).chain(self.map.iter().map(|(_, o)| o.as_str()))
    }
}

/// Parses `DIR=ORIGIN`.
pub fn origin_mapping(spec: &str) -> anyhow::Result<(String, String)> {
    let (dir, origin) = spec
        .split_once('=')
        .with_context(|| format!("--origin-map wants DIR=ORIGIN, not {spec:?}"))?;
    Ok((dir.trim().to_owned(), origin.trim().to_owned()))
}

/// A file to read.
#[derive(Debug, Clone)]
pub struct Found {
    /// Page id: the path relative to the folder, `/`-separated.
    pub id: String,
    /// Where to read it (through a symbolic link inside the folder, the link's target).
    pub path: PathBuf,
    /// Its format.
    pub format: Format,
    /// Its size in bytes.
    pub size: u64,
    /// Its modification time, nanoseconds since the Unix epoch (0 when unknown).
    pub mtime_ns: u64,
}

/// What a walk of the folder found.
#[derive(Debug, Default)]
pub struct Scan {
    /// Files of a format read, in page id order.
    pub files: Vec<Found>,
    /// Files (and folders) not read, with the reason.
    pub refused: Vec<(String, String)>,
    /// Folders that could not be listed: pages under them are kept, not deleted.
    pub unlisted: Vec<String>,
    /// Files of formats not read, counted by extension.
    pub other_formats: BTreeMap<String, usize>,
    /// Hidden entries not read.
    pub hidden: usize,
}

impl Scan {
    /// Whether the page `id` may still exist: its file was found (read or refused) or lies in a
    /// folder that could not be listed.
    pub fn holds(&self, id: &str) -> bool {
        self.files
            .binary_search_by(|f| f.id.as_str().cmp(id))
            .is_ok()
            || self.refused.iter().any(|(r, _)| r == id)
            || self.unlisted.iter().any(|dir| {
                id.strip_prefix(dir.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
            })
    }
}

/// Walks `root`.
pub fn scan(root: &Path, limits: &Limits, extra_text: &[String]) -> anyhow::Result<Scan> {
    let canonical_root = root
        .canonicalize()
        .with_context(|| format!("open {}", root.display()))?;
    let mut out = Scan::default();
    let mut seen = 0usize;
    // Folders to list, relative to the root ("" is the root).
    let mut folders = vec![String::new()];
    while let Some(folder) = folders.pop() {
        let dir = if folder.is_empty() {
            root.to_path_buf()
        } else {
            root.join(&folder)
        };
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if folder.is_empty() => {
                return Err(e).with_context(|| format!("list {}", root.display()));
            }
            Err(e) => {
                out.refused
                    .push((format!("{folder}/"), format!("cannot list the folder: {e}")));
                out.unlisted.push(folder);
                continue;
            }
        };
        let mut names: Vec<_> = entries.filter_map(Result::ok).collect();
        names.sort_by_key(|e| e.file_name());
        let mut subfolders = Vec::new();
        for entry in names {
            let name = entry.file_name();
            let lossy = name.to_string_lossy();
            let id = if folder.is_empty() {
                lossy.to_string()
            } else {
                format!("{folder}/{lossy}")
            };
            if lossy.starts_with('.') {
                out.hidden += 1;
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                out.refused.push((id, "cannot read its type".to_owned()));
                continue;
            };
            if kind.is_dir() {
                subfolders.push(id);
                continue;
            }
            seen += 1;
            anyhow::ensure!(
                seen <= limits.max_files,
                "more than {} files under {} (raise --max-files, or ingest a folder inside it)",
                limits.max_files,
                root.display()
            );
            if name.to_str().is_none() {
                out.refused
                    .push((id, "its name is not UTF-8 (no page id)".to_owned()));
                continue;
            }
            let (path, meta) = if kind.is_symlink() {
                match inside(&canonical_root, &entry.path()) {
                    Ok(found) => found,
                    Err(reason) => {
                        out.refused.push((id, reason));
                        continue;
                    }
                }
            } else {
                match entry.metadata() {
                    Ok(meta) => (entry.path(), meta),
                    Err(e) => {
                        out.refused.push((id, format!("cannot read it: {e}")));
                        continue;
                    }
                }
            };
            if !meta.is_file() {
                out.refused.push((id, "not a regular file".to_owned()));
                continue;
            }
            let Some(format) = Format::of(&id, extra_text) else {
                let ext = formats::extension(&id).unwrap_or_default();
                *out.other_formats.entry(format!(".{ext}")).or_default() += 1;
                continue;
            };
            if id.len() > MAX_NAME_BYTES {
                out.refused.push((
                    id,
                    format!("its path is longer than a page id may be ({MAX_NAME_BYTES} bytes)"),
                ));
                continue;
            }
            if meta.len() > limits.max_file_bytes {
                let reason = format!(
                    "{} bytes, more than --max-file-bytes ({})",
                    meta.len(),
                    limits.max_file_bytes
                );
                out.refused.push((id, reason));
                continue;
            }
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
            out.files.push(Found {
                id,
                path,
                format,
                size: meta.len(),
                mtime_ns,
            });
        }
        // Depth first, in name order.
        folders.extend(subfolders.into_iter().rev());
    }
    out.files.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// The target of the symbolic link at `link` when it is a file inside `root`, with its metadata;
/// the reason it is not followed otherwise.
fn inside(root: &Path, link: &Path) -> Result<(PathBuf, std::fs::Metadata), String> {
    let target = link
        .canonicalize()
        .map_err(|e| format!("a symbolic link that leads nowhere: {e}"))?;
    if !target.starts_with(root) {
        return Err(format!(
            "a symbolic link out of the folder (to {}), not followed",
            target.display()
        ));
    }
    let meta = std::fs::metadata(&target).map_err(|e| format!("cannot read it: {e}"))?;
    if meta.is_dir() {
        return Err("a symbolic link to a folder, not followed".to_owned());
    }
    Ok((target, meta))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> Limits {
        Limits::new(100, 100, 1 << 20)
    }

    #[test]
    fn origins_follow_the_longest_folder_mapped() {
        let origins = Origins::new(
            "docs",
            &[
                ("handbook".into(), "wiki".into()),
                ("./handbook/legal/".into(), "legal".into()),
            ],
        )
        .expect("valid");
        assert_eq!(origins.of("readme.md"), "docs");
        assert_eq!(origins.of("handbook/a.md"), "wiki");
        assert_eq!(origins.of("handbook/legal/terms.md"), "legal");
        assert_eq!(origins.of("handbookish/a.md"), "docs");
        assert!(Origins::new("docs", &[("../x".into(), "y".into())]).is_err());
        assert!(Origins::new(" ", &[]).is_err());
        assert_eq!(
            origin_mapping("a/b = wiki").expect("valid"),
            ("a/b".to_owned(), "wiki".to_owned())
        );
        assert!(origin_mapping("nothing").is_err());
    }

    #[test]
    fn a_walk_reads_documents_counts_the_rest_and_lists_what_it_refuses() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("docs");
        let outside = dir.path().join("secret.md");
        std::fs::write(&outside, "# Secret").expect("write");
        std::fs::create_dir_all(root.join("sub/.hidden")).expect("mkdir");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join("a.md"), "# A").expect("write");
        std::fs::write(root.join("sub/b.rst"), "B\n=\n").expect("write");
        std::fs::write(root.join("sub/.hidden/c.md"), "# C").expect("write");
        std::fs::write(root.join("logo.png"), [0u8; 4]).expect("write");
        std::fs::write(root.join("big.txt"), "x".repeat(101)).expect("write");
        std::os::unix::fs::symlink(&outside, root.join("leak.md")).expect("link");
        std::os::unix::fs::symlink(root.join("a.md"), root.join("alias.md")).expect("link");
        std::os::unix::fs::symlink(root.join("sub"), root.join("loop")).expect("link");

        let scan = scan(&root, &limits(), &[]).expect("scan");
        let ids: Vec<_> = scan.files.iter().map(|f| f.id.as_str()).collect();
        assert_eq!(ids, ["a.md", "alias.md", "sub/b.rst"]);
        let refused: Vec<_> = scan.refused.iter().map(|(id, _)| id.as_str()).collect();
        assert_eq!(refused, ["big.txt", "leak.md", "loop"]);
        assert!(scan.refused[0].1.contains("--max-file-bytes"));
        assert!(scan.refused[1].1.contains("out of the folder"));
        assert!(scan.refused[2].1.contains("to a folder"));
        assert_eq!(scan.other_formats.get(".png"), Some(&1));
        assert_eq!(scan.hidden, 2);
        assert!(scan.holds("sub/b.rst") && scan.holds("big.txt") && !scan.holds("gone.md"));

        let few = Limits {
            max_files: 3,
            ..limits()
        };
        let err = super::scan(&root, &few, &[]).expect_err("too many files");
        assert!(err.to_string().contains("more than 3 files"), "{err}");
    }
}
