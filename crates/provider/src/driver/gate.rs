//! One rate budget shared by every request that holds the same
//! [`RateGate`] (the items of a batch): a request waits at the gate before
//! it is sent, so that a rate limit turns into pacing instead of a storm
//! of 429s that every worker retries on its own.
//!
//! The gate paces at the tighter of two rates: the one it was given
//! (`--rate` requests per minute, `--tpm` tokens per minute) and the one
//! it learned from the provider's own rate-limit headers
//! (`x-ratelimit-limit-requests` on OpenAI, `anthropic-ratelimit-
//! requests-limit` on Anthropic, both per minute). A refusal (429, 503)
//! pauses every request until the server's `retry-after` (or the
//! back-off) has passed; without a limit header a refusal teaches the
//! gate the rate that was just allowed — the requests *answered* in the
//! second before it (not those admitted: requests still in flight were
//! not allowed yet). From there the rate is probed upward by a tenth
//! a second and cut by a tenth at every further refusal, so the gate
//! settles just under the server's limit whichever way it guessed.
//!
//! *Never* holds its lock across an await, and never reorders: a request
//! takes the next free slot the moment it asks.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

pub use crate::http::headers::RateHint;

/// The window the token budget (`--tpm`) is counted over.
const MINUTE: Duration = Duration::from_secs(60);

/// How far back the requests admitted before a refusal are counted to
/// learn the rate the server allows.
const LEARN_WINDOW: Duration = Duration::from_secs(1);

/// How fast a rate taught by a refusal is probed upward: a share of it
/// per second since the last refusal.
const PROBE_PER_SECOND: f64 = 0.1;

/// The gate itself; shared as `Arc<RateGate>` through `HttpSettings`.
#[derive(Debug)]
pub struct RateGate {
    given: RateHint,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The rate the provider announced or a refusal taught.
    learned: RateHint,
    /// No request starts before this (a refusal's wait).
    paused_until: Option<Instant>,
    /// The next free slot at the request rate.
    next_slot: Option<Instant>,
    /// When recent requests were answered (for learning from a refusal).
    answered: VecDeque<Instant>,
    /// The request rate refusals taught (per minute), and when the last
    /// refusal came: the rate is probed upward from there.
    refusal_rate: Option<(u32, Instant)>,
    /// Tokens spent in the last minute, with when.
    spent: VecDeque<(Instant, u64)>,
    /// Requests refused so far (for the batch's summary).
    refusals: u64,
}

impl RateGate {
    /// A gate that paces at `requests_per_minute` and `tokens_per_minute`
    /// when given (each `None`: only what the provider tells it).
    pub fn new(requests_per_minute: Option<u32>, tokens_per_minute: Option<u64>) -> Arc<Self> {
        Arc::new(RateGate {
            given: RateHint {
                requests_per_minute: requests_per_minute.filter(|rate| *rate > 0),
                tokens_per_minute: tokens_per_minute.filter(|rate| *rate > 0),
            },
            state: Mutex::new(State::default()),
        })
    }

    /// Waits until a request may be sent, and takes its slot.
    pub async fn admit(&self) {
        loop {
            let ready_at = {
                let mut state = self.lock();
                let now = Instant::now();
                match self.ready_at(&state, now) {
                    Some(at) if at > now => at,
                    _ => {
                        if let Some(interval) = self.interval(&state) {
                            let slot = state.next_slot.map_or(now, |slot| slot.max(now));
                            state.next_slot = Some(later(slot, interval));
                        }
                        return;
                    }
                }
            };
            tokio::time::sleep_until(ready_at).await;
        }
    }

    /// The provider answered; `hint` is what its headers announced.
    pub fn answered(&self, hint: RateHint) {
        let mut state = self.lock();
        let now = Instant::now();
        state.answered.push_back(now);
        while state
            .answered
            .front()
            .is_some_and(|at| now.duration_since(*at) > LEARN_WINDOW)
        {
            state.answered.pop_front();
        }
        learn(&mut state.learned, hint);
    }

    /// The provider refused a request (429, 503): every request holding
    /// this gate waits `wait` from now. Without an announced rate, the
    /// requests answered in the second before become the rate, and a
    /// further refusal cuts it by a tenth.
    pub fn refused(&self, wait: Duration, hint: RateHint) {
        let mut state = self.lock();
        let now = Instant::now();
        state.refusals += 1;
        let until = later(now, wait);
        state.paused_until = Some(state.paused_until.map_or(until, |at| at.max(until)));
        learn(&mut state.learned, hint);
        if state.learned.requests_per_minute.is_none() && self.given.requests_per_minute.is_none() {
            let allowed = state
                .answered
                .iter()
                .filter(|at| now.duration_since(**at) <= LEARN_WINDOW)
                .count()
                .max(1);
            let per_minute = allowed as u64 * MINUTE.as_secs() / LEARN_WINDOW.as_secs();
            let seen = u32::try_from(per_minute).unwrap_or(u32::MAX);
            let rate = match state.refusal_rate {
                None => seen,
                Some(taught) => {
                    let paced = probed(taught, now);
                    seen.min(paced - paced / 10).max(1)
                }
            };
            // Probed upward from when requests may start again.
            state.refusal_rate = Some((rate, until));
        }
        // Start pacing after the pause, not with a burst.
        state.next_slot = Some(until);
    }

    /// A request used `tokens` (for the token budget).
    pub fn spent(&self, tokens: u64) {
        if tokens == 0 {
            return;
        }
        let now = Instant::now();
        let mut state = self.lock();
        while state
            .spent
            .front()
            .is_some_and(|(when, _)| now.duration_since(*when) >= MINUTE)
        {
            state.spent.pop_front();
        }
        state.spent.push_back((now, tokens));
    }

    /// How long a request that asked now would wait at the gate (no slot
    /// is taken): what the tests and the fuzz target hold to the cap.
    pub fn wait_ahead(&self) -> Duration {
        let state = self.lock();
        let now = Instant::now();
        self.ready_at(&state, now)
            .map_or(Duration::ZERO, |at| at.saturating_duration_since(now))
    }

    /// How many requests the provider refused so far.
    pub fn refusals(&self) -> u64 {
        self.lock().refusals
    }

    /// The request rate the gate paces at: the tighter of the given and
    /// the learned one.
    fn interval(&self, state: &State) -> Option<Duration> {
        let rate = [
            self.given.requests_per_minute,
            state.learned.requests_per_minute,
            state
                .refusal_rate
                .map(|taught| probed(taught, Instant::now())),
        ]
        .into_iter()
        .flatten()
        .min()?;
        MINUTE.checked_div(rate)
    }

    /// When the next request may start, if not now.
    fn ready_at(&self, state: &State, now: Instant) -> Option<Instant> {
        let mut at = state.paused_until.filter(|at| *at > now);
        if self.interval(state).is_some() {
            at = at.max(state.next_slot.filter(|slot| *slot > now));
        }
        let budget = tighter(
            self.given.tokens_per_minute,
            state.learned.tokens_per_minute,
        );
        if let Some(budget) = budget {
            let recent = state
                .spent
                .iter()
                .filter(|(when, _)| now.duration_since(*when) < MINUTE);
            // A server reports the tokens: add them without overflow.
            let used = recent
                .clone()
                .fold(0u64, |sum, (_, tokens)| sum.saturating_add(*tokens));
            if used >= budget {
                // Wait until enough of the minute's spending has aged out.
                let mut freed = 0u64;
                for (when, tokens) in recent {
                    freed = freed.saturating_add(*tokens);
                    if used.saturating_sub(freed) < budget {
                        at = at.max(Some(later(*when, MINUTE)));
                        break;
                    }
                }
            }
        }
        at
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// `wait` after `at`, or as far as the clock goes: no number a server
/// sends can overflow the gate's time arithmetic (the caller caps the
/// wait; this is the floor under that).
fn later(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait)
        .or_else(|| at.checked_add(MINUTE))
        .unwrap_or(at)
}

/// A rate a refusal taught, probed upward by a tenth for every second
/// without another refusal (additive increase; a refusal cuts it by a
/// tenth), so a guess that came out low climbs back to the server's limit.
fn probed((rate, since): (u32, Instant), now: Instant) -> u32 {
    let seconds = now.duration_since(since).as_secs_f64();
    let probed = f64::from(rate) * (1.0 + PROBE_PER_SECOND * seconds);
    if probed >= f64::from(u32::MAX) {
        u32::MAX
    } else {
        (probed as u32).max(rate)
    }
}

/// Keeps the tightest announced limits.
fn learn(learned: &mut RateHint, hint: RateHint) {
    learned.requests_per_minute = tighter(learned.requests_per_minute, hint.requests_per_minute);
    learned.tokens_per_minute = tighter(learned.tokens_per_minute, hint.tokens_per_minute);
}

/// The tighter of two limits, either of which may be absent.
fn tighter<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
#[path = "gate_tests.rs"]
mod tests;
