//! `serve`'s capacity bounds against hostile clients: a global budget of
//! unauthenticated body bytes in flight, and a cap on connections per client
//! address. Both refuse at once rather than wait: a client over a bound gets
//! a 503 (budget) or a closed connection (address), and what is already
//! admitted keeps its resources.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Bytes of request bodies held in memory at once, across every request,
/// before their signature is checked. A request is charged its
/// `Content-Length` before a byte is read, or, for a chunked body, each
/// frame as it arrives; the charge is returned when the request is answered.
///
/// Written by hand rather than with `tokio::sync::Semaphore`: nothing here
/// ever waits for room (a request that does not fit is refused), a charge
/// can exceed the semaphore's `u32` per acquire, and a charge grows frame by
/// frame.
#[derive(Debug)]
pub struct BodyBudget {
    capacity: u64,
    used: AtomicU64,
}

impl BodyBudget {
    pub fn new(capacity: u64) -> Arc<Self> {
        Arc::new(Self {
            capacity,
            used: AtomicU64::new(0),
        })
    }

    /// Bytes charged now.
    #[cfg(test)]
    pub fn used(&self) -> u64 {
        self.used.load(Ordering::Relaxed)
    }

    /// Charges `bytes`, or `None` when they do not fit.
    pub fn charge(self: &Arc<Self>, bytes: u64) -> Option<BodyCharge> {
        let mut charge = BodyCharge {
            budget: Arc::clone(self),
            bytes: 0,
        };
        charge.grow(bytes).then_some(charge)
    }

    fn try_add(&self, bytes: u64) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&sum| sum <= self.capacity)
            })
            .is_ok()
    }
}

/// Bytes charged to a [`BodyBudget`]; returned on drop.
#[derive(Debug)]
pub struct BodyCharge {
    budget: Arc<BodyBudget>,
    bytes: u64,
}

impl BodyCharge {
    /// Charges `bytes` more; false (and nothing charged) when they do not fit.
    pub fn grow(&mut self, bytes: u64) -> bool {
        let fits = self.budget.try_add(bytes);
        if fits {
            self.bytes += bytes;
        }
        fits
    }

    /// Returns `bytes` of the charge to the budget.
    pub fn shrink(&mut self, bytes: u64) {
        let bytes = bytes.min(self.bytes);
        self.bytes -= bytes;
        self.budget.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl Drop for BodyCharge {
    fn drop(&mut self) {
        self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

/// Open connections per client address. `cap = 0` means no cap (for a
/// `serve` behind a reverse proxy, where every connection comes from the
/// proxy's address).
#[derive(Debug)]
pub struct AddressSlots {
    cap: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
}

impl AddressSlots {
    pub fn new(cap: usize) -> Arc<Self> {
        Arc::new(Self {
            cap,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// A slot for one more connection from `address`, or `None` when the
    /// address already holds `cap` connections.
    pub fn admit(self: &Arc<Self>, address: IpAddr) -> Option<AddressSlot> {
        // An IPv4 client of a dual-stack socket counts as its IPv4 address.
        let address = address.to_canonical();
        let mut open = self.open.lock().ok()?;
        let count = open.entry(address).or_insert(0);
        if self.cap != 0 && *count >= self.cap {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            slots: Arc::clone(self),
            address,
        })
    }

    /// Connections open from `address`.
    #[cfg(test)]
    pub fn open(&self, address: IpAddr) -> usize {
        self.open
            .lock()
            .map(|open| open.get(&address.to_canonical()).copied().unwrap_or(0))
            .unwrap_or(0)
    }
}

/// One admitted connection; its slot is freed on drop (and the address
/// forgotten when it has none left, so the map stays as small as the
/// connections open).
#[derive(Debug)]
pub struct AddressSlot {
    slots: Arc<AddressSlots>,
    address: IpAddr,
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let Ok(mut open) = self.slots.open.lock() else {
            return;
        };
        if let Some(count) = open.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_holds_at_its_capacity_and_refuses_one_byte_more() {
        let budget = BodyBudget::new(100);
        let first = budget.charge(60).expect("fits");
        assert!(budget.charge(41).is_none());
        let mut second = budget.charge(40).expect("exactly at capacity");
        assert_eq!(budget.used(), 100);
        assert!(!second.grow(1), "one byte past capacity");
        drop(first);
        assert!(second.grow(60));
        second.shrink(30);
        assert_eq!(budget.used(), 70);
        drop(second);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn an_address_holds_at_most_its_cap_and_frees_slots_on_close() {
        let slots = AddressSlots::new(2);
        let one: IpAddr = "127.0.0.1".parse().expect("ip");
        let two: IpAddr = "127.0.0.2".parse().expect("ip");
        let a = slots.admit(one).expect("first");
        let _b = slots.admit(one).expect("second, at the cap");
        assert!(slots.admit(one).is_none(), "one past the cap");
        assert!(
            slots.admit(two).is_some(),
            "another address is not affected"
        );
        let mapped: IpAddr = "::ffff:127.0.0.1".parse().expect("ip");
        assert!(slots.admit(mapped).is_none(), "the same client over IPv6");
        drop(a);
        assert_eq!(slots.open(one), 1);
        assert!(slots.admit(one).is_some());
    }

    #[test]
    fn a_cap_of_zero_admits_everyone() {
        let slots = AddressSlots::new(0);
        let one: IpAddr = "10.0.0.1".parse().expect("ip");
        let held: Vec<_> = (0..1000).filter_map(|_| slots.admit(one)).collect();
        assert_eq!(held.len(), 1000);
    }
}
