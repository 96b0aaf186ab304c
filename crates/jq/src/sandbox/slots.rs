//! The evaluation slots of a process: at most [`max_concurrent`](super::max_concurrent)
//! evaluations run at once. A request that finds every slot taken waits for one, up to
//! [`SLOT_WAIT`], with at most [`WAITERS_PER_SLOT`] requests waiting per slot; past either
//! it is refused at once ([`super::WorkerResult::Busy`], a 503 with `Retry-After`).
//!
//! Why wait at all: an evaluation of an ordinary program takes well under a millisecond,
//! so a burst of deliveries (GitHub sends several events for one push) only needs to queue
//! for a moment; refusing it at once would make GitHub show those deliveries failed. Why bounded:
//! a tenant's programs that run to their deadline hold slots, and nobody else may wait on
//! them for long, nor pile up without limit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

/// The longest a request waits for a free slot.
pub const SLOT_WAIT: Duration = Duration::from_millis(250);
/// Requests that may wait, per slot. Sized so that for ordinary programs the wait, not this
/// bound, decides: a slot serves thousands of short evaluations in [`SLOT_WAIT`], and a
/// waiter holds only the request it already read. It sheds load at once when the queue is
/// hopeless (programs that run to their deadline hold the slots).
pub const WAITERS_PER_SLOT: usize = 64;

/// A pool of evaluation slots (one per process, the pool's; tests make their own).
#[derive(Debug)]
pub struct Slots {
    semaphore: Semaphore,
    waiting: AtomicUsize,
    max_waiting: usize,
    wait: Duration,
    in_flight: AtomicUsize,
    peak: AtomicUsize,
}

/// One slot, held for an evaluation; released on drop.
#[derive(Debug)]
pub struct Slot<'s> {
    slots: &'s Slots,
    _permit: SemaphorePermit<'s>,
}

/// Counts a waiting request for as long as it waits.
struct Waiting<'s>(&'s AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Slots {
    /// `slots` slots, each with [`WAITERS_PER_SLOT`] waiters of at most `wait`.
    pub fn new(slots: usize, wait: Duration) -> Self {
        Self {
            semaphore: Semaphore::new(slots),
            waiting: AtomicUsize::new(0),
            max_waiting: slots.saturating_mul(WAITERS_PER_SLOT),
            wait,
            in_flight: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// A slot: at once if one is free, else after waiting (bounded, see the module docs);
    /// `None` when none came.
    pub async fn take(&self) -> Option<Slot<'_>> {
        let permit = match self.semaphore.try_acquire() {
            Ok(permit) => permit,
            Err(_) => self.wait_for_one().await?,
        };
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.peak.fetch_max(now, Ordering::AcqRel);
        Some(Slot {
            slots: self,
            _permit: permit,
        })
    }

    async fn wait_for_one(&self) -> Option<SemaphorePermit<'_>> {
        self.waiting
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_waiting).then_some(n + 1)
            })
            .ok()?;
        let _waiting = Waiting(&self.waiting);
        tokio::time::timeout(self.wait, self.semaphore.acquire())
            .await
            .ok()?
            .ok()
    }

    /// Evaluations in flight now.
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Acquire)
    }

    /// The most evaluations in flight at once so far.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Acquire)
    }

    /// Requests waiting for a slot now.
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.slots.in_flight.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_request_waits_for_a_slot_that_frees_within_the_wait() {
        let slots = Slots::new(1, Duration::from_secs(5));
        let held = slots.take().await.expect("a free slot");
        let waiter = slots.take();
        tokio::pin!(waiter);
        assert!(poll_once(waiter.as_mut()).await.is_none(), "it waits");
        assert_eq!(slots.waiting(), 1);
        drop(held);
        let slot = waiter.await.expect("the freed slot");
        assert_eq!(
            (slots.in_flight(), slots.waiting(), slots.peak()),
            (1, 0, 1)
        );
        drop(slot);
        assert_eq!(slots.in_flight(), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_request_is_refused_after_the_wait_and_past_the_waiter_bound() {
        let slots = Slots::new(1, SLOT_WAIT);
        let _held = slots.take().await.expect("a free slot");
        let started = tokio::time::Instant::now();
        assert!(slots.take().await.is_none(), "no slot within the wait");
        assert_eq!(started.elapsed(), SLOT_WAIT);
        assert_eq!(slots.waiting(), 0, "a refused waiter is not counted");

        let mut waiters = Vec::new();
        for _ in 0..WAITERS_PER_SLOT {
            let mut waiter = Box::pin(slots.take());
            assert!(poll_once(waiter.as_mut()).await.is_none());
            waiters.push(waiter);
        }
        assert_eq!(slots.waiting(), WAITERS_PER_SLOT, "at the bound");
        let started = tokio::time::Instant::now();
        assert!(slots.take().await.is_none(), "one past the bound");
        assert_eq!(started.elapsed(), Duration::ZERO, "refused at once");
    }

    /// Polls `future` once: `Some` if it finished.
    async fn poll_once<F: std::future::Future + Unpin>(future: F) -> Option<F::Output> {
        let mut future = future;
        std::future::poll_fn(|context| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut future).poll(context) {
                std::task::Poll::Ready(output) => Some(output),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }
}
