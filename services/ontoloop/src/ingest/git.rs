//! A local git repository's history, read in process with libgit2 (the `git2` crate; no git
//! command needed): the first-parent line from HEAD lists the commits that changed files under
//! the folder, oldest first, each with its files' new blobs, read from the object database.
//! Merges count as the change they brought to the first-parent line, at the merge's time.
//! Renames are a deletion and an addition, as pages are named by their path.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use git2::{Delta, DiffOptions, FileMode, ObjectType, Oid, Repository, Sort};

/// A folder inside a git work tree.
pub struct Repo {
    repo: Repository,
    /// The folder, relative to the work tree's top (empty: the top).
    prefix: PathBuf,
}

/// A commit and the files it changed under the folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Its id.
    pub id: String,
    /// When it was committed.
    pub time: DateTime<Utc>,
    /// What it changed, paths relative to the folder.
    pub changes: Vec<Change>,
}

/// One file changed by a commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// Added or modified: the new content is the blob.
    Write {
        /// Path relative to the folder.
        path: String,
        /// The blob's id.
        blob: String,
    },
    /// Deleted.
    Delete {
        /// Path relative to the folder.
        path: String,
    },
    /// Added or changed as something that is no file (a symbolic link, a submodule).
    NotAFile {
        /// Path relative to the folder.
        path: String,
    },
}

impl Repo {
    /// The repository `dir` is in; an error saying so when it is in none.
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        let not_in = || format!("--git: {} is not in a git work tree", dir.display());
        let repo = Repository::discover(dir).with_context(not_in)?;
        let top = repo.workdir().with_context(not_in)?;
        let (top, dir) = (
            top.canonicalize().with_context(not_in)?,
            dir.canonicalize().with_context(not_in)?,
        );
        let prefix = dir.strip_prefix(&top).with_context(not_in)?.to_path_buf();
        Ok(Self { repo, prefix })
    }

    /// The commit `HEAD` names.
    pub fn head(&self) -> anyhow::Result<String> {
        let head = self
            .repo
            .head()
            .and_then(|head| head.peel_to_commit())
            .context("--git: the repository has no commit")?;
        Ok(head.id().to_string())
    }

    /// Whether `commit` is `head` or one of its ancestors.
    pub fn is_ancestor(&self, commit: &str, head: &str) -> bool {
        match (Oid::from_str(commit), Oid::from_str(head)) {
            (Ok(commit), Ok(head)) => {
                commit == head || self.repo.graph_descendant_of(head, commit).unwrap_or(false)
            }
            _ => false,
        }
    }

    /// The commits after `since` (all when none) up to `head` that changed files under the
    /// folder, oldest first.
    pub fn commits(&self, since: Option<&str>, head: &str) -> anyhow::Result<Vec<Commit>> {
        let mut walk = self.repo.revwalk().context("--git: walk the history")?;
        walk.set_sorting(Sort::TOPOLOGICAL)?;
        walk.simplify_first_parent()?;
        walk.push(Oid::from_str(head).context("--git: HEAD")?)?;
        if let Some(since) = since {
            walk.hide(Oid::from_str(since).context("--git: the last commit pushed")?)?;
        }
        let mut commits = Vec::new();
        for id in walk {
            let id = id.context("--git: walk the history")?;
            let commit = self.repo.find_commit(id)?;
            let changes = self.changes(&commit)?;
            if changes.is_empty() {
                continue;
            }
            let time = DateTime::from_timestamp(commit.time().seconds(), 0)
                .with_context(|| format!("commit {id}: its time"))?;
            commits.push(Commit {
                id: id.to_string(),
                time,
                changes,
            });
        }
        commits.reverse();
        Ok(commits)
    }

    /// What `commit` changed under the folder against its first parent (everything, for a root
    /// commit), paths relative to the folder.
    fn changes(&self, commit: &git2::Commit<'_>) -> anyhow::Result<Vec<Change>> {
        let tree = commit.tree()?;
        let parent = match commit.parents().next() {
            Some(parent) => Some(parent.tree()?),
            None => None,
        };
        let mut opts = DiffOptions::new();
        if !self.prefix.as_os_str().is_empty() {
            opts.pathspec(&self.prefix);
        }
        let diff = self
            .repo
            .diff_tree_to_tree(parent.as_ref(), Some(&tree), Some(&mut opts))
            .with_context(|| format!("commit {}: its changes", commit.id()))?;
        let mut changes = Vec::new();
        for delta in diff.deltas() {
            let file = match delta.status() {
                Delta::Deleted => delta.old_file(),
                _ => delta.new_file(),
            };
            let Some(path) = file.path() else { continue };
            // The pathspec matches by prefix of the path's text; keep what is inside the folder.
            let Ok(path) = path.strip_prefix(&self.prefix) else {
                continue;
            };
            let path = path.to_string_lossy().into_owned();
            changes.push(match (delta.status(), file.mode()) {
                (Delta::Deleted, _) => Change::Delete { path },
                (_, FileMode::Blob | FileMode::BlobExecutable) => Change::Write {
                    path,
                    blob: file.id().to_string(),
                },
                _ => Change::NotAFile { path },
            });
        }
        Ok(changes)
    }

    /// The content of `blob`: the reason it is not read when it is larger than `max_bytes`, an
    /// error when the object database cannot give it.
    pub fn blob(&self, blob: &str, max_bytes: u64) -> anyhow::Result<Result<Vec<u8>, String>> {
        let id = Oid::from_str(blob).with_context(|| format!("blob id {blob:?}"))?;
        let odb = self.repo.odb().context("open the object database")?;
        let (size, kind) = odb
            .read_header(id)
            .with_context(|| format!("read blob {blob}"))?;
        anyhow::ensure!(kind == ObjectType::Blob, "{blob} is a {kind}, not a blob");
        if size as u64 > max_bytes {
            return Ok(Err(format!(
                "{size} bytes, more than --max-file-bytes ({max_bytes})"
            )));
        }
        let content = self
            .repo
            .find_blob(id)
            .with_context(|| format!("read blob {blob}"))?;
        Ok(Ok(content.content().to_vec()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Commits the files of `files` (path, content; `None` deletes) on HEAD at `seconds`.
    fn commit(repo: &Repository, files: &[(&str, Option<&str>)], seconds: i64) -> Oid {
        let top = repo.workdir().expect("a work tree").to_path_buf();
        let mut index = repo.index().expect("the index");
        for (path, content) in files {
            let file = top.join(path);
            match content {
                Some(text) => {
                    std::fs::create_dir_all(file.parent().expect("a folder")).expect("mkdir");
                    std::fs::write(&file, text).expect("write");
                    index.add_path(Path::new(path)).expect("add");
                }
                None => {
                    std::fs::remove_file(&file).expect("remove");
                    index.remove_path(Path::new(path)).expect("remove");
                }
            }
        }
        index.write().expect("write the index");
        let tree = repo
            .find_tree(index.write_tree().expect("a tree"))
            .expect("the tree");
        let who = git2::Signature::new("t", "t@example.com", &git2::Time::new(seconds, 0))
            .expect("a signature");
        let parents: Vec<git2::Commit<'_>> = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        repo.commit(Some("HEAD"), &who, &who, "c", &tree, &parents)
            .expect("a commit")
    }

    #[test]
    fn the_history_under_a_folder_comes_oldest_first_with_its_blobs() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init(dir.path()).expect("init");
        let first = commit(
            &repo,
            &[("docs/a b.md", Some("# A\none")), ("top.md", Some("top"))],
            1_704_880_800,
        );
        commit(&repo, &[("top.md", Some("top, changed"))], 1_704_900_000);
        let last = commit(
            &repo,
            &[
                ("docs/a b.md", Some("# A\ntwo")),
                ("docs/old.md", Some("x")),
            ],
            1_704_967_200,
        );
        commit(&repo, &[("docs/old.md", None)], 1_705_000_000);
        let docs = Repo::open(&dir.path().join("docs")).expect("open");
        let head = docs.head().expect("a head");
        let commits = docs.commits(None, &head).expect("the history");
        // The commit that changed only top.md is not under the folder.
        assert_eq!(commits.len(), 3);
        assert_eq!(commits[0].id, first.to_string());
        assert_eq!(commits[0].time.to_rfc3339(), "2024-01-10T10:00:00+00:00");
        let Change::Write { path, blob } = &commits[0].changes[0] else {
            panic!("a write: {:?}", commits[0].changes);
        };
        assert_eq!((path.as_str(), commits[0].changes.len()), ("a b.md", 1));
        assert_eq!(
            docs.blob(blob, 100).expect("read"),
            Ok(b"# A\none".to_vec())
        );
        assert!(docs.blob(blob, 3).expect("read").is_err());
        assert_eq!(
            commits[2].changes,
            [Change::Delete {
                path: "old.md".into()
            }]
        );
        // After the last commit pushed, only what came later.
        let later = docs
            .commits(Some(&last.to_string()), &head)
            .expect("the history");
        assert_eq!(later.len(), 1);
        assert!(docs.is_ancestor(&first.to_string(), &head));
        assert!(!docs.is_ancestor(&head, &first.to_string()));
        let whole = Repo::open(dir.path()).expect("open");
        assert_eq!(whole.commits(None, &head).expect("the history").len(), 4);
        let elsewhere = tempfile::tempdir().expect("temp dir");
        assert!(Repo::open(elsewhere.path()).is_err());
    }
}
