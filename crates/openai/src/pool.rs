//! Which endpoint a request goes to. Pure: the time is passed in, so the rules can be tested
//! with a fake clock; the client holds a `Rotation` under a mutex and does the waiting.
//!
//! - A request goes to the endpoint in rotation with the fewest requests in flight under its
//!   AIMD limit (ties: the fewest calls so far, then the first listed).
//! - An endpoint that fails `failures_to_remove` times in a row (connection errors, timeouts,
//!   5xx, unusable bodies) leaves the rotation for a back-off period. When it ends, the next
//!   request probes it: a success brings it back, a failure doubles the back-off (capped).
//! - When no endpoint is in rotation, requests still go out, to the endpoint whose back-off ends
//!   first: the client's own retries and backoff then decide, as with a single endpoint.
//! - An endpoint that says when to come back (`Retry-After` on a 429 or 503, or a rate-limit
//!   budget spent: `x-ratelimit-remaining-* = 0` until `x-ratelimit-reset-*`) is paused: no
//!   request goes there until then, from any caller, while the others take the load.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::limiter::Aimd;
use crate::settings::Failover;

/// How one request to an endpoint ended, as far as the rotation cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// An answer.
    Success,
    /// 429: alive but asking for fewer requests.
    RateLimited,
    /// 503: fewer requests, and a failure.
    Unavailable,
    /// Connection error, timeout, other 5xx, unusable body.
    Failed,
    /// Another 4xx: the request's fault, not the endpoint's.
    Rejected,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Health {
    Up,
    /// Out of rotation since `since` until `until`, then probed.
    Out {
        since: Duration,
        until: Duration,
    },
    /// Out of rotation since `since`; one request is probing it.
    Probing {
        since: Duration,
    },
}

struct Slot {
    aimd: Aimd,
    in_flight: u32,
    failures_in_a_row: u32,
    /// Back-offs since the endpoint was last answered: the exponent of the next one.
    backoffs: u32,
    health: Health,
    calls: u64,
    failures: u64,
    /// Times taken out so far: a request sent before the last time cannot bring it back.
    times_out: u64,
    out_total: Duration,
    /// No request goes out before this (a server's `Retry-After` or rate-limit reset).
    paused_until: Duration,
    pauses: u64,
    paused_total: Duration,
}

/// A request's place at an endpoint; hand it back to [`Rotation::finish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    pub endpoint: usize,
    generation: u64,
    /// The endpoint's outages when it was sent.
    outages: u64,
    /// The request that decides whether an endpoint out of rotation comes back.
    pub probe: bool,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Pick {
    Go(Ticket),
    /// Every endpoint that may take the request is full: wait for one to finish, or at most this
    /// long (when a back-off ends and a probe may go out).
    Wait(Option<Duration>),
}

/// What the manifest records of one endpoint.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointStats {
    /// The chat completions URL without credentials or query.
    pub url: String,
    /// HTTP requests sent to it.
    pub calls: u64,
    /// Of which failed: connection errors, timeouts, 5xx, unusable bodies.
    pub failures: u64,
    /// Times it was taken out of the rotation.
    pub times_out: u64,
    /// Milliseconds out of the rotation in all (up to the report, if it is still out).
    pub out_of_rotation_ms: u64,
    /// In the rotation when the report was made.
    pub in_rotation: bool,
    /// Times the server asked for a pause (`Retry-After`, a spent rate-limit budget), and how
    /// long requests to it were held in all.
    #[serde(default)]
    pub pauses: u64,
    #[serde(default)]
    /// How long requests to it were held by those pauses, in milliseconds.
    pub paused_ms: u64,
}

pub struct Rotation {
    slots: Vec<Slot>,
    failover: Failover,
}

impl Rotation {
    pub fn new(concurrency: &[u32], failover: Failover) -> Rotation {
        let slots = concurrency
            .iter()
            .map(|&max| Slot {
                aimd: Aimd::new(max),
                in_flight: 0,
                failures_in_a_row: 0,
                backoffs: 0,
                health: Health::Up,
                calls: 0,
                failures: 0,
                times_out: 0,
                out_total: Duration::ZERO,
                paused_until: Duration::ZERO,
                pauses: 0,
                paused_total: Duration::ZERO,
            })
            .collect();
        Rotation { slots, failover }
    }

    /// Where the next request goes. `avoid` lists endpoints the request already failed at: they
    /// are chosen only when nothing else can take it.
    pub fn pick(&mut self, now: Duration, avoid: &[usize]) -> Pick {
        if let Some(pick) = self.pick_among(now, avoid) {
            return pick;
        }
        // Only endpoints this request already failed at are left: try them again.
        let again = if avoid.is_empty() { None } else { self.pick_among(now, &[]) };
        again.unwrap_or_else(|| self.pick_when_all_out(now))
    }

    /// Among the endpoints in rotation (or due a probe), not avoided; `None` when there is none.
    fn pick_among(&mut self, now: Duration, avoid: &[usize]) -> Option<Pick> {
        let allowed = |i: &usize| !avoid.contains(i);
        // A back-off that has ended: this request is the probe.
        let due = (0..self.slots.len()).filter(allowed).find(|&i| {
            matches!(self.slots[i].health, Health::Out { until, .. } if until <= now)
                && self.slots[i].paused_until <= now
        });
        if let Some(i) = due {
            let Health::Out { since, .. } = self.slots[i].health else { unreachable!() };
            self.slots[i].health = Health::Probing { since };
            return Some(Pick::Go(self.take(i, true)));
        }
        let up = |i: &usize| self.slots[*i].health == Health::Up;
        if !(0..self.slots.len()).filter(allowed).any(|i| up(&i)) {
            return None;
        }
        let free = (0..self.slots.len())
            .filter(allowed)
            .filter(up)
            .filter(|&i| self.slots[i].in_flight < self.slots[i].aimd.limit() && self.slots[i].paused_until <= now)
            .min_by_key(|&i| (self.slots[i].in_flight, self.slots[i].calls, i));
        Some(match free {
            Some(i) => Pick::Go(self.take(i, false)),
            None => Pick::Wait(self.next_event(now)),
        })
    }

    /// No endpoint is in rotation: the one whose back-off ends first takes the request, if it
    /// has room.
    fn pick_when_all_out(&mut self, now: Duration) -> Pick {
        let ends = |slot: &Slot| match slot.health {
            Health::Out { until, .. } => until,
            Health::Probing { .. } | Health::Up => now,
        };
        let first = (0..self.slots.len()).min_by_key(|&i| (ends(&self.slots[i]), i)).expect("at least one endpoint");
        if self.slots[first].in_flight < self.slots[first].aimd.limit() && self.slots[first].paused_until <= now {
            Pick::Go(self.take(first, false))
        } else {
            Pick::Wait(self.next_event(now))
        }
    }

    /// How long until a back-off or a pause ends, when one will.
    fn next_event(&self, now: Duration) -> Option<Duration> {
        self.slots
            .iter()
            .flat_map(|slot| {
                let probe = match slot.health {
                    Health::Out { until, .. } => Some(until.max(slot.paused_until).saturating_sub(now)),
                    _ => None,
                };
                let pause = (slot.paused_until > now).then(|| slot.paused_until - now);
                probe.into_iter().chain(pause)
            })
            .min()
    }

    /// Holds every request to endpoint `i` until `until`, as its server asked.
    pub fn pause(&mut self, i: usize, until: Duration, now: Duration) {
        let slot = &mut self.slots[i];
        if until <= slot.paused_until.max(now) {
            return;
        }
        if slot.paused_until <= now {
            slot.pauses += 1;
        }
        slot.paused_total += until - slot.paused_until.max(now);
        slot.paused_until = until;
    }

    fn take(&mut self, i: usize, probe: bool) -> Ticket {
        let slot = &mut self.slots[i];
        slot.in_flight += 1;
        slot.calls += 1;
        Ticket { endpoint: i, generation: slot.aimd.generation(), outages: slot.times_out, probe }
    }

    /// Whether an endpoint not in `tried` is in rotation or due a probe: a failed request can
    /// go there at once instead of backing off.
    pub fn has_other(&self, now: Duration, tried: &[usize]) -> bool {
        self.slots.iter().enumerate().any(|(i, slot)| {
            !tried.contains(&i)
                && slot.paused_until <= now
                && match slot.health {
                    Health::Up => true,
                    Health::Out { until, .. } => until <= now,
                    Health::Probing { .. } => false,
                }
        })
    }

    /// Records how a request ended.
    pub fn finish(&mut self, ticket: Ticket, outcome: Outcome, now: Duration) {
        let Rotation { slots, failover } = self;
        let slot = &mut slots[ticket.endpoint];
        slot.in_flight = slot.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Success => slot.aimd.succeeded(ticket.generation, now),
            Outcome::RateLimited | Outcome::Unavailable => slot.aimd.overloaded(ticket.generation, now),
            Outcome::Failed | Outcome::Rejected => {}
        }
        if matches!(outcome, Outcome::Unavailable | Outcome::Failed) {
            slot.failures += 1;
            slot.failures_in_a_row += 1;
            match slot.health {
                Health::Up if slot.failures_in_a_row >= failover.failures_to_remove.max(1) => {
                    slot.times_out += 1;
                    slot.backoffs = 1;
                    slot.health = Health::Out { since: now, until: now + backoff(failover, 1) };
                }
                Health::Probing { since } if ticket.probe => {
                    slot.backoffs += 1;
                    slot.health = Health::Out { since, until: now + backoff(failover, slot.backoffs) };
                }
                // A request sent before it was taken out, or while every endpoint was out.
                _ => {}
            }
        } else if slot.health == Health::Up {
            slot.failures_in_a_row = 0;
        } else if ticket.outages == slot.times_out {
            // An answer to a request sent while it was out shows it is back. (One sent before it
            // was taken out and answered late shows nothing new.)
            let (Health::Out { since, .. } | Health::Probing { since }) = slot.health else { unreachable!() };
            slot.out_total += now.saturating_sub(since);
            slot.health = Health::Up;
            slot.failures_in_a_row = 0;
            slot.backoffs = 0;
        }
    }

    /// Per endpoint, in the order listed; `urls` names them.
    pub fn stats(&self, urls: &[String], now: Duration) -> Vec<EndpointStats> {
        self.slots
            .iter()
            .zip(urls)
            .map(|(slot, url)| {
                let ongoing = match slot.health {
                    Health::Out { since, .. } | Health::Probing { since } => now.saturating_sub(since),
                    Health::Up => Duration::ZERO,
                };
                EndpointStats {
                    url: url.clone(),
                    calls: slot.calls,
                    failures: slot.failures,
                    times_out: slot.times_out,
                    out_of_rotation_ms: (slot.out_total + ongoing).as_millis() as u64,
                    in_rotation: slot.health == Health::Up,
                    pauses: slot.pauses,
                    // A pause still to come is counted: it was asked for.
                    paused_ms: slot.paused_total.as_millis() as u64,
                }
            })
            .collect()
    }

    pub fn aimd(&self, i: usize) -> &Aimd {
        &self.slots[i].aimd
    }
}

/// The `n`-th back-off in a row: base × 2^(n-1), at most the cap.
fn backoff(failover: &Failover, n: u32) -> Duration {
    failover.backoff_base.saturating_mul(1u32 << (n.max(1) - 1).min(20)).min(failover.backoff_max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn failover() -> Failover {
        Failover { failures_to_remove: 3, backoff_base: ms(1000), backoff_max: ms(5000) }
    }

    fn go(pick: Pick) -> Ticket {
        match pick {
            Pick::Go(ticket) => ticket,
            other => panic!("expected a ticket, got {other:?}"),
        }
    }

    /// Sends one request and finishes it at once.
    fn call(rotation: &mut Rotation, now: Duration, outcome: Outcome) -> Ticket {
        let ticket = go(rotation.pick(now, &[]));
        rotation.finish(ticket, outcome, now);
        ticket
    }

    #[test]
    fn requests_go_to_the_fewest_in_flight_then_the_fewest_calls_then_the_first() {
        let mut rotation = Rotation::new(&[2, 2, 2], failover());
        let order: Vec<usize> = (0..6).map(|_| go(rotation.pick(ms(0), &[])).endpoint).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2]);
        assert_eq!(rotation.pick(ms(0), &[]), Pick::Wait(None), "every endpoint full");
        // One finishes at endpoint 1: it has the fewest in flight.
        rotation.finish(Ticket { endpoint: 1, generation: 0, outages: 0, probe: false }, Outcome::Success, ms(1));
        assert_eq!(go(rotation.pick(ms(1), &[])).endpoint, 1);

        // Sequential calls spread by calls made, deterministically.
        let mut rotation = Rotation::new(&[4, 4, 4], failover());
        let order: Vec<usize> = (0..7).map(|_| call(&mut rotation, ms(0), Outcome::Success).endpoint).collect();
        assert_eq!(order, [0, 1, 2, 0, 1, 2, 0]);
        // Uneven concurrency: the small endpoint fills first.
        let mut rotation = Rotation::new(&[1, 3], failover());
        let order: Vec<usize> = (0..4).map(|_| go(rotation.pick(ms(0), &[])).endpoint).collect();
        assert_eq!(order, [0, 1, 1, 1]);
        assert_eq!(rotation.pick(ms(0), &[]), Pick::Wait(None));
    }

    #[test]
    fn a_failed_request_avoids_the_endpoint_it_failed_at_unless_nothing_else_can_take_it() {
        let mut rotation = Rotation::new(&[1, 1], failover());
        assert_eq!(go(rotation.pick(ms(0), &[0])).endpoint, 1);
        // Avoiding 0 while 1 is full: wait for 1 rather than go back to where it failed.
        assert_eq!(rotation.pick(ms(0), &[0]), Pick::Wait(None));
        // Avoiding every endpoint in rotation is avoiding none.
        assert_eq!(go(rotation.pick(ms(0), &[0, 1])).endpoint, 0);
        assert!(rotation.has_other(ms(0), &[0]));
        assert!(!rotation.has_other(ms(0), &[0, 1]));
    }

    #[test]
    fn repeated_failures_take_an_endpoint_out_and_a_probe_brings_it_back() {
        // Requests to endpoint 1 are left in flight: it has room for them all.
        let mut rotation = Rotation::new(&[8, 100], failover());
        let urls = ["a".to_string(), "b".to_string()];
        // Two failures in a row, then an answer: still in.
        for outcome in [Outcome::Failed, Outcome::Unavailable, Outcome::Success] {
            let t = go(rotation.pick(ms(0), &[1]));
            assert_eq!(t.endpoint, 0);
            rotation.finish(t, outcome, ms(0));
        }
        assert!(rotation.stats(&urls, ms(0))[0].in_rotation);
        // 429s and other 4xx are not failures of the endpoint.
        for outcome in [Outcome::RateLimited, Outcome::Rejected, Outcome::Failed, Outcome::Failed, Outcome::Rejected] {
            let t = go(rotation.pick(ms(0), &[1]));
            rotation.finish(t, outcome, ms(0));
        }
        assert!(rotation.stats(&urls, ms(0))[0].in_rotation);
        // Three in a row: out at t = 100 ms for 1 s. A request sent before, answered after, does
        // not bring it back.
        let late = go(rotation.pick(ms(100), &[1]));
        for _ in 0..3 {
            let t = go(rotation.pick(ms(100), &[1]));
            assert_eq!(t.endpoint, 0);
            rotation.finish(t, Outcome::Failed, ms(100));
        }
        rotation.finish(late, Outcome::Success, ms(150));
        let stats = &rotation.stats(&urls, ms(600))[0];
        assert_eq!((stats.in_rotation, stats.times_out, stats.out_of_rotation_ms, stats.failures), (false, 1, 500, 7));
        // Out: every request goes to endpoint 1, even one that would rather avoid it.
        for t in [ms(200), ms(1099)] {
            assert_eq!(go(rotation.pick(t, &[])).endpoint, 1);
            assert_eq!(go(rotation.pick(t, &[1])).endpoint, 1);
        }
        assert!(!rotation.has_other(ms(1099), &[1]));
        assert!(rotation.has_other(ms(1100), &[1]), "due a probe");
        // At 1.1 s the next request probes it; while the probe is out, nothing else goes there.
        let probe = go(rotation.pick(ms(1100), &[]));
        assert_eq!((probe.endpoint, probe.probe), (0, true));
        assert_eq!(go(rotation.pick(ms(1100), &[])).endpoint, 1);
        // The probe fails: out again, for 2 s, still one time out.
        rotation.finish(probe, Outcome::Failed, ms(1200));
        assert_eq!(go(rotation.pick(ms(3199), &[])).endpoint, 1);
        let probe = go(rotation.pick(ms(3200), &[]));
        assert!(probe.probe);
        rotation.finish(probe, Outcome::Failed, ms(3300));
        // 4 s, then the cap of 5 s.
        let probe = go(rotation.pick(ms(7300), &[]));
        rotation.finish(probe, Outcome::Failed, ms(7300));
        assert_eq!(go(rotation.pick(ms(12299), &[])).endpoint, 1);
        let probe = go(rotation.pick(ms(12300), &[]));
        assert!(probe.probe);
        let stats = &rotation.stats(&urls, ms(12300))[0];
        assert_eq!((stats.times_out, stats.out_of_rotation_ms, stats.in_rotation), (1, 12200, false));
        // The probe is answered: back in, out of rotation 100 ms → 12.4 s.
        rotation.finish(probe, Outcome::Success, ms(12400));
        let stats = &rotation.stats(&urls, ms(20000))[0];
        assert_eq!((stats.times_out, stats.out_of_rotation_ms, stats.in_rotation), (1, 12300, true));
        // Back-offs start again from the base the next time.
        for _ in 0..3 {
            let t = go(rotation.pick(ms(20000), &[1]));
            rotation.finish(t, Outcome::Failed, ms(20000));
        }
        assert_eq!(go(rotation.pick(ms(20999), &[])).endpoint, 1);
        assert!(go(rotation.pick(ms(21000), &[])).probe);
        assert_eq!(rotation.stats(&urls, ms(21000))[0].times_out, 2);
    }

    #[test]
    fn when_every_endpoint_is_out_requests_still_go_to_the_first_due_back() {
        let mut rotation = Rotation::new(&[1, 1], failover());
        let urls = ["a".to_string(), "b".to_string()];
        for now in [ms(0), ms(0), ms(0)] {
            let t = go(rotation.pick(now, &[1]));
            rotation.finish(t, Outcome::Failed, now);
        }
        for _ in 0..3 {
            let t = go(rotation.pick(ms(10), &[0]));
            assert_eq!(t.endpoint, 1);
            rotation.finish(t, Outcome::Failed, ms(10));
        }
        // Both out: 0 is back at 1 s, 1 at 1.01 s. The request goes to 0, not as a probe.
        let t = go(rotation.pick(ms(500), &[]));
        assert_eq!((t.endpoint, t.probe), (0, false));
        // 0 is full (limit 1): the next waits until 0's back-off ends.
        assert_eq!(rotation.pick(ms(500), &[]), Pick::Wait(Some(ms(500))));
        // Its failure does not extend the back-off; its success brings 0 back at once.
        rotation.finish(t, Outcome::Failed, ms(600));
        let t = go(rotation.pick(ms(700), &[]));
        rotation.finish(t, Outcome::Success, ms(700));
        let stats = rotation.stats(&urls, ms(800));
        assert_eq!((stats[0].in_rotation, stats[0].out_of_rotation_ms), (true, 700));
        assert_eq!((stats[1].in_rotation, stats[1].out_of_rotation_ms), (false, 790));
        assert_eq!(go(rotation.pick(ms(800), &[])).endpoint, 0);
    }

    #[test]
    fn a_paused_endpoint_takes_no_request_until_its_pause_ends() {
        let mut rotation = Rotation::new(&[4, 4], failover());
        let urls = ["a".to_string(), "b".to_string()];
        rotation.pause(0, ms(1000), ms(0));
        // While 0 is paused every request goes to 1, and 0 is no endpoint to fail over to.
        for _ in 0..4 {
            assert_eq!(go(rotation.pick(ms(10), &[])).endpoint, 1);
        }
        assert!(!rotation.has_other(ms(10), &[1]));
        assert_eq!(rotation.pick(ms(10), &[]), Pick::Wait(Some(ms(990))), "1 is full: wait for 0's pause to end");
        assert_eq!(go(rotation.pick(ms(1000), &[])).endpoint, 0);
        // A shorter pause inside a longer one changes nothing; a longer one extends it.
        rotation.pause(1, ms(3000), ms(1000));
        rotation.pause(1, ms(2000), ms(1500));
        rotation.pause(1, ms(4000), ms(2500));
        let stats = rotation.stats(&urls, ms(5000));
        assert_eq!((stats[0].pauses, stats[0].paused_ms), (1, 1000));
        assert_eq!((stats[1].pauses, stats[1].paused_ms), (1, 3000));
        // One endpoint, paused: the request waits for it.
        let mut single = Rotation::new(&[2], failover());
        single.pause(0, ms(500), ms(0));
        assert_eq!(single.pick(ms(100), &[]), Pick::Wait(Some(ms(400))));
        assert_eq!(go(single.pick(ms(500), &[])).endpoint, 0);
    }

    #[test]
    fn a_single_endpoint_never_refuses_a_request() {
        // Whatever happens, one endpoint always takes the request when it has room.
        let mut rotation = Rotation::new(&[1], failover());
        for step in 0..200u64 {
            let now = ms(step * 37);
            let t = go(rotation.pick(now, &[0]));
            assert_eq!(t.endpoint, 0);
            let outcome = [Outcome::Failed, Outcome::Success, Outcome::Unavailable, Outcome::RateLimited]
                [(step % 7 % 4) as usize];
            rotation.finish(t, outcome, now);
        }
        assert_eq!(rotation.stats(&["a".into()], ms(0))[0].calls, 200);
    }

    #[test]
    fn every_sequence_of_outcomes_keeps_the_counts_consistent() {
        // Exhaustive over every sequence of 6 outcomes at two endpoints (5^6 sequences): the
        // calls add up, in-flight counts return to zero, an endpoint is out only after
        // `failures_to_remove` failures, and out-of-rotation time never exceeds the elapsed time.
        let outcomes =
            [Outcome::Success, Outcome::RateLimited, Outcome::Unavailable, Outcome::Failed, Outcome::Rejected];
        let urls = ["a".to_string(), "b".to_string()];
        for code in 0..5usize.pow(6) {
            let mut rotation = Rotation::new(&[1, 2], failover());
            let mut tickets = Vec::new();
            let mut c = code;
            for step in 0..6u64 {
                let now = ms(step * 400);
                if let Pick::Go(t) = rotation.pick(now, &[]) {
                    tickets.push(t);
                }
                // Finish the oldest in flight with the next outcome.
                if step % 2 == 1 || tickets.len() == 3 {
                    let t = tickets.remove(0);
                    rotation.finish(t, outcomes[c % 5], now);
                    c /= 5;
                }
            }
            for t in tickets.drain(..) {
                rotation.finish(t, Outcome::Success, ms(2400));
            }
            let stats = rotation.stats(&urls, ms(2400));
            assert!(rotation.slots.iter().all(|s| s.in_flight == 0), "{code}");
            for s in &stats {
                assert!(s.out_of_rotation_ms <= 2400, "{code}: {s:?}");
                assert!(s.times_out == 0 || s.failures >= 3, "{code}: {s:?}");
                assert!(s.failures <= s.calls, "{code}: {s:?}");
            }
        }
    }
}
