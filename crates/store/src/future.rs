//! The future type of the store traits' methods.

use std::future::Future;
use std::pin::Pin;

/// The future returned by the store traits' methods. Boxed so that the traits stay
/// dyn-compatible (`Arc<dyn BlobStore>`), and `Send` so they run on a multi-threaded runtime.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
