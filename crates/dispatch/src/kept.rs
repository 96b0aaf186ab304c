//! Content-addressed reads kept in memory by hash ([`Kept`]): snapshot contents
//! and config bundles, which never change for a hash.

use std::sync::Arc;

/// Snapshot contents kept by one [`BlobContent`](crate::content::BlobContent): at most
/// this many bytes of prompt text (a snapshot holding more is read each time, never kept).
pub const CONTENT_CACHE_BYTES: usize = 32 * 1024 * 1024;

/// Content-addressed reads kept by hash, oldest dropped first, at most
/// [`CONTENT_CACHE_BYTES`] in all: what was read for a hash never changes.
#[derive(Debug)]
pub(crate) struct Kept<T> {
    /// The entries, oldest first, and their total bytes.
    entries: std::sync::Mutex<(KeptEntries<T>, usize)>,
}

/// (hash, content, its bytes), oldest first.
type KeptEntries<T> = std::collections::VecDeque<(String, Arc<T>, usize)>;

impl<T> Default for Kept<T> {
    fn default() -> Self {
        Self {
            entries: std::sync::Mutex::new((KeptEntries::new(), 0)),
        }
    }
}

impl<T> Kept<T> {
    pub(crate) fn get(&self, hash: &str) -> Option<Arc<T>> {
        let entries = self.entries.lock().ok()?;
        entries
            .0
            .iter()
            .find(|(kept, _, _)| kept == hash)
            .map(|(_, content, _)| Arc::clone(content))
    }

    /// Keeps `content` of `bytes` bytes (more than the whole budget is never kept).
    pub(crate) fn keep(&self, hash: &str, content: Arc<T>, bytes: usize) {
        if bytes > CONTENT_CACHE_BYTES {
            return;
        }
        let Ok(mut guard) = self.entries.lock() else {
            return;
        };
        let (entries, total) = &mut *guard;
        if entries.iter().any(|(kept, _, _)| kept == hash) {
            return;
        }
        while *total + bytes > CONTENT_CACHE_BYTES {
            let Some((_, _, oldest)) = entries.pop_front() else {
                break;
            };
            *total -= oldest;
        }
        entries.push_back((hash.to_owned(), content, bytes));
        *total += bytes;
    }
}
