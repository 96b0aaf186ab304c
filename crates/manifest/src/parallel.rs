//! An order-keeping parallel map for CPU-bound work per agent (reading
//! manifests, hashing slices). Written by hand on `std::thread::scope`
//! rather than taking a thread-pool crate: the work is one flat split of a
//! slice into one part per core, with no nesting and no work stealing.

/// The stack of a worker thread: what the main thread has, so a deeply
/// nested input that is handled on the main thread is handled here too.
const WORKER_STACK: usize = 8 << 20;

/// `items.iter().map(work).collect()`, with the items split into up to one
/// contiguous part per core, each part at least `per_thread` items long
/// (fewer items stay on this thread). The results keep the items' order. A
/// part whose thread cannot be started runs on this thread; a panic in
/// `work` is re-raised here, as the sequential map would raise it.
pub fn map_in_order<T: Sync, R: Send>(
    items: &[T],
    per_thread: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let run_part = |part: &[T]| -> Vec<R> { part.iter().map(&work).collect() };
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len().div_ceil(per_thread.max(1)));
    if threads <= 1 {
        return run_part(items);
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                let worker = std::thread::Builder::new()
                    .name("astrolift-worker".to_owned())
                    .stack_size(WORKER_STACK)
                    .spawn_scoped(scope, move || run_part(part));
                (part, worker)
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|(part, worker)| match worker {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                Err(_) => run_part(part),
            })
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::map_in_order;

    #[test]
    fn keeps_the_order_of_the_items() {
        let items: Vec<u32> = (0..1000).collect();
        let doubled = map_in_order(&items, 10, |n| n * 2);
        assert_eq!(doubled, items.iter().map(|n| n * 2).collect::<Vec<_>>());
    }

    #[test]
    fn small_inputs_and_empty_inputs() {
        assert_eq!(map_in_order(&[1, 2, 3], 64, |n| n + 1), [2, 3, 4]);
        assert!(map_in_order(&[] as &[u8], 0, |n| *n).is_empty());
    }
}
