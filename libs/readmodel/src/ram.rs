//! Where a read model's tantivy indexes live: tantivy's RAM directory, with its locks kept in
//! the process instead of as lock files.
//!
//! tantivy takes its meta lock to reload a reader and to collect the files no segment uses any
//! more, which the segment updater does after every commit and merge. Taken as a lock file, a
//! lock found held is tried again after a 100 ms sleep: a catch-up that met the end of a merge
//! of its index took 100 ms more, and every reader behind its write lock waited as long (at
//! 100,000 pages and 50 events/s, about one catch-up in two hundred). Here a waiter sleeps only
//! until the holder lets go.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, FileSlice, Lock, RamDirectory, WatchCallback,
    WatchHandle, WritePtr,
};

/// The longest a blocking lock is waited for before the call fails (tantivy's own file lock
/// gives up after about as long).
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// A RAM directory whose locks wait on a condition variable (see the module header).
#[derive(Clone, Debug, Default)]
pub(crate) struct RamIndexDirectory {
    files: RamDirectory,
    locks: Arc<Locks>,
}

/// The locks held now, by path.
#[derive(Debug, Default)]
struct Locks {
    held: Mutex<HashSet<PathBuf>>,
    freed: Condvar,
}

/// One held lock: let go when dropped.
struct Held {
    locks: Arc<Locks>,
    path: PathBuf,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.locks
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.path);
        self.locks.freed.notify_all();
    }
}

impl Directory for RamIndexDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.files.get_file_handle(path)
    }

    fn open_read(&self, path: &Path) -> Result<FileSlice, OpenReadError> {
        self.files.open_read(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.files.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.files.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.files.open_write(path)
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.files.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.files.atomic_write(path, data)
    }

    fn sync_directory(&self) -> std::io::Result<()> {
        self.files.sync_directory()
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.files.watch(watch_callback)
    }

    /// A lock held elsewhere is waited for when `lock` blocks (at most [`LOCK_WAIT`]) and
    /// refused at once when it does not (the writer's lock: one writer per index).
    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        let deadline = Instant::now() + LOCK_WAIT;
        let mut held = self
            .locks
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        while held.contains(&lock.filepath) {
            let left = deadline.saturating_duration_since(Instant::now());
            if !lock.is_blocking || left.is_zero() {
                return Err(LockError::LockBusy);
            }
            held = self
                .locks
                .freed
                .wait_timeout(held, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        held.insert(lock.filepath.clone());
        Ok(DirectoryLock::from(Box::new(Held {
            locks: Arc::clone(&self.locks),
            path: lock.filepath.clone(),
        })))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(blocking: bool) -> Lock {
        Lock {
            filepath: PathBuf::from(".test.lock"),
            is_blocking: blocking,
        }
    }

    /// The writer's kind of lock is refused while held; a blocking one waits for its holder
    /// and goes on the moment it lets go, not a sleep later.
    #[test]
    fn a_held_lock_refuses_or_waits_for_its_holder() {
        let directory = RamIndexDirectory::default();
        let first = directory.acquire_lock(&lock(false)).expect("a free lock");
        assert!(matches!(
            directory.acquire_lock(&lock(false)),
            Err(LockError::LockBusy)
        ));
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = {
            let directory = directory.clone();
            std::thread::spawn(move || {
                let taken = directory.acquire_lock(&lock(true)).is_ok();
                tx.send(taken).expect("send");
            })
        };
        assert!(
            rx.recv_timeout(Duration::from_millis(50)).is_err(),
            "taken while held"
        );
        drop(first);
        assert_eq!(rx.recv_timeout(LOCK_WAIT), Ok(true));
        waiter.join().expect("waiter");
        // Let go again once its holder is dropped.
        assert!(directory.acquire_lock(&lock(false)).is_ok());
    }
}
