//! A holder that publishes a new version of a value atomically: readers get the old or the new
//! value, never a mix, and never wait for a build.

use std::sync::{Arc, PoisonError, RwLock};

/// The current version of a value behind an `Arc`, replaced as a whole.
///
/// Build (or patch) the next version aside, then [`Swap::store`] it: the write lock is held only
/// to replace one pointer, and the read lock only to clone one. Readers keep the `Arc` they
/// loaded for as long as they need it, so a request sees one consistent graph throughout.
#[derive(Debug)]
pub struct Swap<T> {
    current: RwLock<Arc<T>>,
}

impl<T> Swap<T> {
    /// Starts with `value` as the current version.
    pub fn new(value: T) -> Self {
        Self::from_arc(Arc::new(value))
    }

    /// Starts with an already shared value.
    pub fn from_arc(value: Arc<T>) -> Self {
        Swap {
            current: RwLock::new(value),
        }
    }

    /// The current version.
    pub fn load(&self) -> Arc<T> {
        // A panic while holding the lock cannot leave a torn value: the only write is a pointer
        // assignment. So a poisoned lock is still safe to read.
        Arc::clone(&self.current.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// Publishes `next` and returns the version it replaced.
    pub fn store(&self, next: Arc<T>) -> Arc<T> {
        let mut guard = self.current.write().unwrap_or_else(PoisonError::into_inner);
        std::mem::replace(&mut *guard, next)
    }

    /// Publishes `next` and returns the version it replaced.
    pub fn replace(&self, next: T) -> Arc<T> {
        self.store(Arc::new(next))
    }
}

impl<T: Default> Default for Swap<T> {
    fn default() -> Self {
        Swap::new(T::default())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::thread;

    use super::*;

    #[test]
    fn store_returns_the_previous_version() {
        let swap = Swap::new(1);
        let held = swap.load();
        assert_eq!(*swap.replace(2), 1);
        assert_eq!(*held, 1, "a reader keeps the version it loaded");
        assert_eq!(*swap.load(), 2);
    }

    /// Each version is a vector whose every element equals its generation; a reader that ever
    /// saw a mixed vector would have seen a half-published value.
    #[test]
    fn readers_never_see_a_partial_version() {
        let swap = Arc::new(Swap::new(vec![0_u64; 1000]));
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (swap, done) = (Arc::clone(&swap), Arc::clone(&done));
                thread::spawn(move || {
                    let mut last = 0;
                    let mut reads = 0_u64;
                    while !done.load(Ordering::Acquire) || reads == 0 {
                        let version = swap.load();
                        let generation = version[0];
                        assert!(version.iter().all(|&g| g == generation), "torn read");
                        assert!(generation >= last, "went back in time");
                        last = generation;
                        reads += 1;
                    }
                    last
                })
            })
            .collect();
        for generation in 1..=200_u64 {
            let next = vec![generation; 1000];
            swap.replace(next);
        }
        done.store(true, Ordering::Release);
        for reader in readers {
            let last = reader.join().expect("reader thread");
            assert!(last <= 200);
        }
        assert_eq!(swap.load()[999], 200);
    }
}
