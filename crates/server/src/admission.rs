//! Who may wait at the door: the connections that have not authenticated yet, capped per peer
//! address and in total so that no party can hold every place (SPEC §12, issue 30).
//!
//! Every accepted connection takes a place ([`Pending`]) until a door accepts its token (for a
//! WebSocket: until `hello-ok`) or it closes. The places are kept in the order they were taken,
//! and each knows whether a request of its connection is being served (`in_flight`). A
//! connection with nothing in flight — one that has sent nothing, half a head, is idle between
//! keep-alive requests, or is a WebSocket that has not sent `connect` — is *idle*, and an idle
//! place can be taken away ("evicted": the connection is closed, nothing it asked for is cut off).
//!
//! - **Total** (`max_unauthenticated`): a new connection when every place is taken closes the
//!   oldest idle one. Holding idle sockets therefore never locks anyone out: each newcomer
//!   displaces the oldest idler, and a client that authenticates leaves the count. Only when
//!   every waiting connection has a request in flight is the newcomer refused (503).
//! - **Per address** (`max_unauthenticated_per_address`; an IPv6 peer counts by its /64): a
//!   connection from an address that has its cap closes that address's oldest idle ones that
//!   have waited at least `trim_after`, until the address is under its cap. Younger ones are
//!   left alone, so a burst of honest clients from one host (100 benchmark threads on
//!   loopback) is not cut down mid-handshake; the total still bounds it.
//!
//! The eviction order is by age, oldest first, so a client that connects and authenticates
//! is displaced only if a whole cap's worth of newer connections arrives while it does.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

/// The caps and the grace a place gets before its own address may take it back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Caps {
    pub total: usize,
    pub per_address: usize,
    pub trim_after: Duration,
}

/// The connections waiting to authenticate.
pub(crate) struct Admission {
    caps: Caps,
    waiting: Mutex<Waiting>,
}

/// No place could be made: every waiting connection has a request in flight.
#[derive(Debug)]
pub(crate) struct Full;

/// What an admission did besides taking a place.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Evictions {
    /// Idle connections closed because their address was over its cap.
    pub per_address: usize,
    /// Idle connections closed because every place was taken.
    pub total: usize,
}

#[derive(Default)]
struct Waiting {
    next: u64,
    /// Places by when they were taken (ids grow).
    by_age: BTreeMap<u64, Place>,
    by_peer: HashMap<Peer, BTreeSet<u64>>,
}

struct Place {
    peer: Peer,
    taken: Instant,
    in_flight: usize,
    evicted: CancellationToken,
}

/// A peer as counted: an IPv4 address (IPv4-mapped IPv6 included), or an IPv6 /64, which one
/// host typically has whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Peer(IpAddr);

impl Peer {
    fn of(ip: IpAddr) -> Self {
        match ip.to_canonical() {
            IpAddr::V6(v6) => {
                let prefix = u128::from(v6) & !u128::from(u64::MAX);
                Self(IpAddr::V6(prefix.into()))
            }
            v4 => Self(v4),
        }
    }
}

impl Admission {
    pub(crate) fn new(caps: Caps) -> Arc<Self> {
        Arc::new(Self {
            caps,
            waiting: Mutex::new(Waiting::default()),
        })
    }

    fn waiting(&self) -> MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for a connection from `ip`, making room as the module doc says.
    pub(crate) fn admit(
        self: &Arc<Self>,
        ip: IpAddr,
        now: Instant,
    ) -> Result<(Pending, Evictions), Full> {
        let peer = Peer::of(ip);
        let mut waiting = self.waiting();
        let mut evictions = Evictions::default();
        while waiting.count(peer) >= self.caps.per_address {
            let grace = Some((now, self.caps.trim_after));
            let Some(id) = waiting.oldest_idle(Some(peer), grace) else {
                break;
            };
            waiting.evict(id);
            evictions.per_address += 1;
        }
        if waiting.by_age.len() >= self.caps.total {
            let id = waiting.oldest_idle(None, None).ok_or(Full)?;
            waiting.evict(id);
            evictions.total += 1;
        }
        let id = waiting.next;
        waiting.next += 1;
        let evicted = CancellationToken::new();
        let place = Place {
            peer,
            taken: now,
            in_flight: 0,
            evicted: evicted.clone(),
        };
        waiting.by_age.insert(id, place);
        waiting.by_peer.entry(peer).or_default().insert(id);
        let pending = Pending(Arc::new(Ticket {
            admission: self.clone(),
            id,
            evicted,
        }));
        Ok((pending, evictions))
    }

    /// How many connections are waiting.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.waiting().by_age.len()
    }

    fn release(&self, id: u64) {
        self.waiting().remove(id);
    }

    fn set_busy(&self, id: u64, busy: bool) {
        if let Some(place) = self.waiting().by_age.get_mut(&id) {
            place.in_flight = match busy {
                true => place.in_flight + 1,
                false => place.in_flight.saturating_sub(1),
            };
        }
    }
}

impl Waiting {
    fn count(&self, peer: Peer) -> usize {
        self.by_peer.get(&peer).map_or(0, BTreeSet::len)
    }

    /// The oldest place with nothing in flight (of `peer`, if given; taken at least `grace`
    /// before `now`, if given).
    fn oldest_idle(&self, peer: Option<Peer>, grace: Option<(Instant, Duration)>) -> Option<u64> {
        let ids: Box<dyn Iterator<Item = &u64>> = match peer {
            Some(peer) => Box::new(self.by_peer.get(&peer)?.iter()),
            None => Box::new(self.by_age.keys()),
        };
        for id in ids {
            let place = self.by_age.get(id)?;
            if let Some((now, grace)) = grace
                && now.saturating_duration_since(place.taken) < grace
            {
                // Every later place is younger still.
                return None;
            }
            if place.in_flight == 0 {
                return Some(*id);
            }
        }
        None
    }

    fn evict(&mut self, id: u64) {
        if let Some(place) = self.remove(id) {
            place.evicted.cancel();
        }
    }

    fn remove(&mut self, id: u64) -> Option<Place> {
        let place = self.by_age.remove(&id)?;
        if let Some(ids) = self.by_peer.get_mut(&place.peer) {
            ids.remove(&id);
            if ids.is_empty() {
                self.by_peer.remove(&place.peer);
            }
        }
        Some(place)
    }
}

/// A connection's place among the unauthenticated ones, held until it authenticates or closes.
/// Handed to every request of the connection as an extension; the door that accepts a token
/// calls [`Pending::authenticated`].
#[derive(Clone)]
pub struct Pending(Arc<Ticket>);

struct Ticket {
    admission: Arc<Admission>,
    id: u64,
    evicted: CancellationToken,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.admission.release(self.id);
    }
}

impl Pending {
    /// The connection proved who it is: it no longer counts against the caps.
    pub fn authenticated(&self) {
        self.0.admission.release(self.0.id);
    }

    /// Cancelled when the connection lost its place to a newer one: close it.
    pub(crate) fn evicted(&self) -> &CancellationToken {
        &self.0.evicted
    }

    /// Marks a request in flight until the guard is dropped: the connection is not idle.
    pub(crate) fn serving(&self) -> Serving {
        self.0.admission.set_busy(self.0.id, true);
        Serving(self.clone())
    }
}

/// A request of an unauthenticated connection being served (see [`Pending::serving`]).
pub(crate) struct Serving(Pending);

impl Drop for Serving {
    fn drop(&mut self) {
        let ticket = &self.0.0;
        ticket.admission.set_busy(ticket.id, false);
    }
}

/// Releases the connection's place, if the request came through [`crate::listen`].
pub(crate) fn authenticated(pending: Option<&axum::Extension<Pending>>) {
    if let Some(axum::Extension(pending)) = pending {
        pending.authenticated();
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    const A: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 1));
    const B: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 2));
    const SECOND: Duration = Duration::from_secs(1);

    fn admission(total: usize, per_address: usize) -> Arc<Admission> {
        Admission::new(Caps {
            total,
            per_address,
            trim_after: SECOND,
        })
    }

    fn evictions(per_address: usize, total: usize) -> Evictions {
        Evictions { per_address, total }
    }

    #[test]
    fn a_full_house_closes_its_oldest_idle_connection() {
        let doors = admission(3, 3);
        let t0 = Instant::now();
        let (first, _) = doors.admit(A, t0).unwrap();
        let (second, _) = doors.admit(B, t0).unwrap();
        let (third, _) = doors.admit(A, t0).unwrap();
        // The first has a request in flight: the second, the oldest idle one, goes.
        let serving = first.serving();
        let (fourth, evictions) = doors.admit(B, t0).unwrap();
        let total = self::evictions(0, 1);
        assert_eq!(evictions, total);
        assert_eq!(
            [&first, &second, &third, &fourth].map(|p| p.evicted().is_cancelled()),
            [false, true, false, false]
        );
        assert_eq!(doors.len(), 3);
        // Once its request is answered the first is idle again, and the oldest.
        drop(serving);
        let (_fifth, evictions) = doors.admit(A, t0).unwrap();
        assert_eq!(evictions, total);
        assert!(first.evicted().is_cancelled());
        assert!(!third.evicted().is_cancelled());
    }

    #[test]
    fn only_when_every_waiting_connection_is_served_is_a_newcomer_refused() {
        let doors = admission(2, 2);
        let t0 = Instant::now();
        let (first, _) = doors.admit(A, t0).unwrap();
        let (second, _) = doors.admit(B, t0).unwrap();
        let _serving = [first.serving(), second.serving()];
        assert!(doors.admit(A, t0 + SECOND).is_err());
        assert_eq!(doors.len(), 2);
        // Authenticating or closing frees a place at once.
        first.authenticated();
        let (third, evictions) = doors.admit(A, t0).unwrap();
        assert_eq!(evictions, self::evictions(0, 0));
        drop(third);
        assert_eq!(doors.len(), 1);
    }

    #[test]
    fn an_address_over_its_cap_loses_its_oldest_connections_that_had_time_to_authenticate() {
        let doors = admission(100, 2);
        let t0 = Instant::now();
        let mut from_a: Vec<Pending> = (0..5).map(|_| doors.admit(A, t0).unwrap().0).collect();
        // A burst: none of them has waited a second, so none is closed.
        assert_eq!(doors.len(), 5);
        let (other, _) = doors.admit(B, t0).unwrap();
        // A second later the next one from A trims A to under its cap (one in flight is spared).
        let serving = from_a[1].serving();
        let (newest, evictions) = doors.admit(A, t0 + SECOND).unwrap();
        assert_eq!(evictions, self::evictions(4, 0));
        from_a.push(newest);
        assert_eq!(
            from_a
                .iter()
                .map(|p| p.evicted().is_cancelled())
                .collect::<Vec<_>>(),
            [true, false, true, true, true, false]
        );
        assert!(!other.evicted().is_cancelled());
        drop(serving);
        assert_eq!(doors.len(), 3);
    }

    #[test]
    fn ipv6_peers_count_by_their_64_and_mapped_ipv4_as_ipv4() {
        let one: IpAddr = "2001:db8::1".parse().unwrap();
        let two: IpAddr = "2001:db8::ffff:2".parse().unwrap();
        let other: IpAddr = "2001:db8:0:1::1".parse().unwrap();
        assert_eq!(Peer::of(one), Peer::of(two));
        assert!(Peer::of(one) != Peer::of(other));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(Peer::of(mapped), Peer::of(A));
    }
}
