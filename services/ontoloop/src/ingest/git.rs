//! A local git repository's history through the `git` command (no git library in the build):
//! `git log --first-parent` lists the commits that changed files under the folder, oldest first,
//! with each file's new blob, and one `git cat-file --batch` process reads the blobs. Merges
//! count as the change they brought to the first-parent line, at the merge's time.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use anyhow::Context as _;
use chrono::{DateTime, Utc};

/// A folder inside a git work tree.
#[derive(Debug, Clone)]
pub struct Repo {
    dir: PathBuf,
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
    /// The repository `dir` is in; an error saying so when it is in none or git is missing.
    pub fn open(dir: &Path) -> anyhow::Result<Self> {
        let repo = Self {
            dir: dir.to_path_buf(),
        };
        repo.git(&["rev-parse", "--show-toplevel"])
            .with_context(|| format!("--git: {} is not in a git work tree", dir.display()))?;
        Ok(repo)
    }

    /// The commit `HEAD` names.
    pub fn head(&self) -> anyhow::Result<String> {
        let out = self
            .git(&["rev-parse", "--verify", "HEAD^{commit}"])
            .context("--git: the repository has no commit")?;
        Ok(String::from_utf8_lossy(&out).trim().to_owned())
    }

    /// Whether `commit` is `head` or one of its ancestors.
    pub fn is_ancestor(&self, commit: &str, head: &str) -> bool {
        self.command(&["merge-base", "--is-ancestor", commit, head])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// The commits after `since` (all when none) up to `head` that changed files under the
    /// folder, oldest first.
    pub fn commits(&self, since: Option<&str>, head: &str) -> anyhow::Result<Vec<Commit>> {
        let range = match since {
            Some(since) => format!("{since}..{head}"),
            None => head.to_owned(),
        };
        let out = self.git(&[
            "-c",
            "log.showSignature=false",
            "log",
            "--reverse",
            "--first-parent",
            "-m",
            "--no-renames",
            "--relative",
            "--raw",
            "--no-abbrev",
            "-z",
            "--format=%x01%H %ct",
            &range,
            "--",
            ".",
        ])?;
        parse_log(&out)
    }

    /// A reader of blobs: one `git cat-file --batch` process.
    pub fn blobs(&self) -> anyhow::Result<Blobs> {
        let mut child = self
            .command(&["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("start git cat-file")?;
        let stdin = child.stdin.take().context("git cat-file's stdin")?;
        let stdout = BufReader::new(child.stdout.take().context("git cat-file's stdout")?);
        Ok(Blobs {
            child,
            stdin,
            stdout,
        })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("git");
        command
            .arg("-C")
            .arg(&self.dir)
            .args(args)
            .env("GIT_TERMINAL_PROMPT", "0");
        command
    }

    /// Runs git; its stdout, or an error with its stderr.
    fn git(&self, args: &[&str]) -> anyhow::Result<Vec<u8>> {
        let out = self
            .command(args)
            .stdin(Stdio::null())
            .output()
            .context("run git (--git reads history with the git command)")?;
        anyhow::ensure!(
            out.status.success(),
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
        Ok(out.stdout)
    }
}

/// Parses `git log -z --raw --format=%x01%H %ct`.
fn parse_log(out: &[u8]) -> anyhow::Result<Vec<Commit>> {
    let text = String::from_utf8_lossy(out);
    let mut commits = Vec::new();
    for chunk in text.split('\u{1}').filter(|c| !c.trim().is_empty()) {
        let mut fields = chunk.split('\0');
        let header = fields.next().unwrap_or_default();
        let (id, seconds) = header
            .trim()
            .split_once(' ')
            .with_context(|| format!("a git log header: {header:?}"))?;
        let seconds: i64 = seconds
            .parse()
            .with_context(|| format!("a commit time: {seconds:?}"))?;
        let time = DateTime::from_timestamp(seconds, 0)
            .with_context(|| format!("a commit time: {seconds}"))?;
        let mut changes = Vec::new();
        while let Some(meta) = fields.next() {
            let meta = meta.trim_start_matches('\n');
            if meta.is_empty() {
                continue;
            }
            let path = fields
                .next()
                .with_context(|| format!("a path after {meta:?}"))?
                .to_owned();
            // `:old_mode new_mode old_blob new_blob status`
            let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
            let [_, new_mode, _, new_blob, status] = parts[..] else {
                anyhow::bail!("a git log --raw line: {meta:?}");
            };
            changes.push(match status.chars().next() {
                Some('D') => Change::Delete { path },
                _ if new_mode.starts_with("100") => Change::Write {
                    path,
                    blob: new_blob.to_owned(),
                },
                _ => Change::NotAFile { path },
            });
        }
        commits.push(Commit {
            id: id.to_owned(),
            time,
            changes,
        });
    }
    Ok(commits)
}

/// Blobs read through one `git cat-file --batch`.
pub struct Blobs {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Blobs {
    /// The content of `blob`: the reason it is not read when it is larger than `max_bytes`, an
    /// error when git fails.
    pub fn read(&mut self, blob: &str, max_bytes: u64) -> anyhow::Result<Result<Vec<u8>, String>> {
        writeln!(self.stdin, "{blob}").context("ask git cat-file")?;
        self.stdin.flush().context("ask git cat-file")?;
        let mut header = String::new();
        self.stdout
            .read_line(&mut header)
            .context("read git cat-file")?;
        let parts: Vec<&str> = header.split_whitespace().collect();
        let [_, "blob", size] = parts[..] else {
            anyhow::bail!("git cat-file {blob}: {}", header.trim());
        };
        let size: u64 = size
            .parse()
            .with_context(|| format!("git cat-file size {size:?}"))?;
        if size > max_bytes {
            // Read past it (and its newline) unkept.
            std::io::copy(&mut (&mut self.stdout).take(size + 1), &mut std::io::sink())
                .context("read git cat-file")?;
            return Ok(Err(format!(
                "{size} bytes, more than --max-file-bytes ({max_bytes})"
            )));
        }
        let mut content = vec![0; usize::try_from(size).context("blob size")?];
        self.stdout
            .read_exact(&mut content)
            .context("read git cat-file")?;
        let mut newline = [0u8; 1];
        self.stdout
            .read_exact(&mut newline)
            .context("read git cat-file")?;
        Ok(Ok(content))
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        // Closing its stdin ends cat-file; reap it so no zombie is left.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_log_is_read_commit_by_commit() {
        let zero = "0".repeat(40);
        let (a, b) = ("a".repeat(40), "b".repeat(40));
        let log = format!(
            "\u{1}{c1} 1704880800\0\n:000000 100644 {zero} {a} A\0docs/a b.md\0\
             :000000 120000 {zero} {b} A\0link.md\0\
             \u{1}{c2} 1704967200\0\n:100644 100644 {a} {b} M\0docs/a b.md\0\
             :100644 000000 {a} {zero} D\0old.md\0",
            c1 = "1".repeat(40),
            c2 = "2".repeat(40),
        );
        let commits = parse_log(log.as_bytes()).expect("parsed");
        assert_eq!(commits.len(), 2);
        assert_eq!(commits[0].time.to_rfc3339(), "2024-01-10T10:00:00+00:00");
        assert_eq!(
            commits[0].changes,
            [
                Change::Write {
                    path: "docs/a b.md".into(),
                    blob: a.clone()
                },
                Change::NotAFile {
                    path: "link.md".into()
                }
            ]
        );
        assert_eq!(
            commits[1].changes,
            [
                Change::Write {
                    path: "docs/a b.md".into(),
                    blob: b
                },
                Change::Delete {
                    path: "old.md".into()
                }
            ]
        );
        assert!(parse_log(b"").expect("empty").is_empty());
    }
}
