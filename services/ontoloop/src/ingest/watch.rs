//! `--watch`: the folder followed through the operating system's file events (the `notify`
//! crate: inotify on Linux; other systems poll), each burst of changes followed by a rescan that
//! pushes what changed, as a re-run would. A rescan reads only files whose size or modification
//! time moved, so following a large folder costs a walk of its metadata per burst.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher as _};
use tokio::sync::mpsc;

use super::{Intake, Options, Run, Summary, folder_run};

/// How long a burst of events is let settle before the rescan (an editor's save is several).
const SETTLE: Duration = Duration::from_millis(50);

/// A folder being followed.
pub struct Watch {
    // Kept alive: dropping it stops the events.
    _watcher: notify::RecommendedWatcher,
    events: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    root: PathBuf,
}

impl Watch {
    /// Starts following `opts.root` (before the first run, so nothing changed during it is
    /// missed).
    pub fn start(opts: &Options) -> anyhow::Result<Self> {
        let (tx, events) = mpsc::unbounded_channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .context("follow the folder")?;
        watcher
            .watch(&opts.root, RecursiveMode::Recursive)
            .with_context(|| format!("follow {}", opts.root.display()))?;
        let root = opts
            .root
            .canonicalize()
            .unwrap_or_else(|_| opts.root.clone());
        Ok(Self {
            _watcher: watcher,
            events,
            root,
        })
    }

    /// Waits for a change to a file that could be a page, lets the burst settle, then pushes
    /// what changed. None when the events ended.
    pub async fn next(
        &mut self,
        intake: &Intake,
        opts: &Options,
    ) -> Option<anyhow::Result<Summary>> {
        loop {
            let event = self.events.recv().await?;
            if self.matters(event) {
                break;
            }
        }
        tokio::time::sleep(SETTLE).await;
        while self.events.try_recv().is_ok() {}
        Some(folder_run(intake, opts, Run::Rescan).await)
    }

    /// Whether an event may change a page: a write, creation, removal or rename of something not
    /// hidden (the state file lives in `.ontoloop/`; editors' swap files start with `.`). Reads
    /// are no change (a rescan reads files: that must not start another).
    fn matters(&self, event: notify::Result<notify::Event>) -> bool {
        let Ok(event) = event else {
            // An overflowed or failed watch: rescan to be sure.
            return true;
        };
        let relevant = match event.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        relevant
            && (event.paths.is_empty() || event.paths.iter().any(|path| !hidden(&self.root, path)))
    }
}

/// Whether `path` (under `root`) has a hidden component.
fn hidden(root: &Path, path: &Path) -> bool {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .any(|c| matches!(c, Component::Normal(name) if name.to_string_lossy().starts_with('.')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_paths_are_no_change() {
        let root = Path::new("/docs");
        assert!(hidden(root, Path::new("/docs/.ontoloop/ingest-acme.json")));
        assert!(hidden(root, Path::new("/docs/a/.a.md.swp")));
        assert!(!hidden(root, Path::new("/docs/a/b.md")));
        // The folder's own name may start with a dot.
        assert!(!hidden(Path::new("/x/.docs"), Path::new("/x/.docs/b.md")));
    }
}
