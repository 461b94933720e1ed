//! How this deployment's conversations move: how often a turn stays on the previous turn's
//! template, moves to another of its datasource, or to another datasource. A property of
//! the catalog and its users, not of a benchmark: counted from the sessions the router
//! sees, where a turn sure of itself alone (`switchyard_core::conversation`'s
//! self-contained test) is label enough, and smoothed toward what the configured weights
//! imply until there is traffic (`sessions.transitions.prior_turns`). The conversation's
//! filter multiplies its configured step weights by the learned rates over the default
//! ones, so with no traffic it routes as configured.
//!
//! The counts are kept by a `TransitionStore`: in memory locally, one DynamoDB item on
//! AWS that every router instance adds to (`switchyard-aws`).

use serde::{Deserialize, Serialize};
use switchyard_catalog::BoxFuture;
use switchyard_contract::error::Result;

use crate::config::{ContextConfig, TransitionsConfig};

/// Where a turn went from the previous turn's template.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transition {
    Stay,
    /// Another template of the same datasource (a lookup going on to its action too).
    SameDatasource,
    OtherDatasource,
}

/// Transitions counted, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionCounts {
    pub stay: u64,
    pub same_datasource: u64,
    pub other_datasource: u64,
}

impl TransitionCounts {
    pub fn add(&mut self, transition: Transition) {
        match transition {
            Transition::Stay => self.stay += 1,
            Transition::SameDatasource => self.same_datasource += 1,
            Transition::OtherDatasource => self.other_datasource += 1,
        }
    }

    pub fn total(&self) -> u64 {
        self.stay + self.same_datasource + self.other_datasource
    }

    pub fn plus(self, other: TransitionCounts) -> TransitionCounts {
        TransitionCounts {
            stay: self.stay + other.stay,
            same_datasource: self.same_datasource + other.same_datasource,
            other_datasource: self.other_datasource + other.other_datasource,
        }
    }
}

/// Shares of the three kinds of transition; they sum to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TransitionShares {
    pub stay: f32,
    pub same_datasource: f32,
    pub other_datasource: f32,
}

/// The rates the conversation's filter moves by, for one catalog.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TransitionRates {
    /// The transitions counted so far (every instance's, as last read).
    pub observed: TransitionCounts,
    /// What the configured weights imply for this catalog's templates.
    pub configured: TransitionShares,
    /// The counts smoothed toward `configured` by `prior_turns` pseudo-turns: in force.
    pub learned: TransitionShares,
}

impl TransitionRates {
    /// `templates_per_datasource`: the catalog's datasources' template counts.
    /// With `transitions.learn` off, the configured shares stay in force.
    pub fn new(
        context: &ContextConfig,
        transitions: &TransitionsConfig,
        templates_per_datasource: &[usize],
        observed: TransitionCounts,
    ) -> TransitionRates {
        let configured = implied_shares(context, templates_per_datasource);
        let n = if transitions.learn {
            observed.total() as f32
        } else {
            0.0
        };
        let k = transitions.prior_turns as f32;
        let smooth = |count: u64, share: f32| {
            let count = if transitions.learn { count as f32 } else { 0.0 };
            (count + k * share) / (n + k).max(f32::MIN_POSITIVE)
        };
        let learned = if n + k > 0.0 {
            TransitionShares {
                stay: smooth(observed.stay, configured.stay),
                same_datasource: smooth(observed.same_datasource, configured.same_datasource),
                other_datasource: smooth(observed.other_datasource, configured.other_datasource),
            }
        } else {
            configured
        };
        TransitionRates {
            observed,
            configured,
            learned,
        }
    }

    /// The filter's settings with its step weights moved to the learned rates: each
    /// configured weight times its kind's learned share over its configured share.
    pub fn apply(&self, context: &ContextConfig) -> ContextConfig {
        let factor = |learned: f32, configured: f32| {
            if configured > 0.0 {
                learned / configured
            } else {
                1.0
            }
        };
        let stay = factor(self.learned.stay, self.configured.stay);
        let same = factor(
            self.learned.same_datasource,
            self.configured.same_datasource,
        );
        let other = factor(
            self.learned.other_datasource,
            self.configured.other_datasource,
        );
        ContextConfig {
            stay: context.stay * stay,
            lookup_to_action: context.lookup_to_action * same,
            same_datasource: context.same_datasource * same,
            other_datasource: context.other_datasource * other,
            ..context.clone()
        }
    }
}

/// The shares the configured weights give a template's next turn, averaged over the
/// catalog's templates (a lookup's lift to its actions left out: it moves within the
/// datasource's share).
fn implied_shares(context: &ContextConfig, templates_per_datasource: &[usize]) -> TransitionShares {
    let all: usize = templates_per_datasource.iter().sum();
    let mut shares = TransitionShares {
        stay: 0.0,
        same_datasource: 0.0,
        other_datasource: 0.0,
    };
    if all == 0 {
        shares.stay = 1.0;
        return shares;
    }
    for &n in templates_per_datasource {
        let same = context.same_datasource * n.saturating_sub(1) as f32;
        let other = context.other_datasource * (all - n) as f32;
        let total = context.stay + same + other;
        if total <= 0.0 {
            continue;
        }
        let weight = n as f32 / all as f32;
        shares.stay += weight * context.stay / total;
        shares.same_datasource += weight * same / total;
        shares.other_datasource += weight * other / total;
    }
    shares
}

/// Where the deployment's transition counts are kept.
pub trait TransitionStore: Send + Sync {
    /// Add `delta` to the counts; the counts after it, every instance's additions included.
    fn add(&self, delta: TransitionCounts) -> BoxFuture<'_, Result<TransitionCounts>>;
}

/// Counts in this process (local `serve`, tests).
#[derive(Default)]
pub struct MemoryTransitionStore {
    counts: std::sync::Mutex<TransitionCounts>,
}

impl TransitionStore for MemoryTransitionStore {
    fn add(&self, delta: TransitionCounts) -> BoxFuture<'_, Result<TransitionCounts>> {
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        *counts = counts.plus(delta);
        let now = *counts;
        Box::pin(std::future::ready(Ok(now)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context() -> ContextConfig {
        ContextConfig::default()
    }

    #[test]
    fn without_traffic_the_configured_weights_stand() {
        let c = context();
        let rates = TransitionRates::new(
            &c,
            &TransitionsConfig::default(),
            &[15, 12, 12, 1],
            TransitionCounts::default(),
        );
        let sum = rates.configured.stay
            + rates.configured.same_datasource
            + rates.configured.other_datasource;
        assert!((sum - 1.0).abs() < 1e-5, "{rates:?}");
        // SGD's fit (stay 0.95 against 0.005 a template) stays about 5 turns in 6 here.
        assert!((0.75..0.9).contains(&rates.configured.stay), "{rates:?}");
        let applied = rates.apply(&c);
        assert!((applied.stay - c.stay).abs() < 1e-5);
        assert!((applied.other_datasource - c.other_datasource).abs() < 1e-7);
    }

    #[test]
    fn traffic_that_switches_lowers_the_stay_weight() {
        let c = context();
        let config = TransitionsConfig::default();
        let observed = TransitionCounts {
            stay: 100,
            same_datasource: 100,
            other_datasource: 800,
        };
        let rates = TransitionRates::new(&c, &config, &[15, 12, 12, 1], observed);
        assert!(rates.learned.stay < 0.2, "{rates:?}");
        assert!(
            rates.learned.stay > 0.1,
            "smoothed toward the configured share"
        );
        let applied = rates.apply(&c);
        assert!(applied.stay < c.stay / 3.0, "{applied:?}");
        assert!(applied.other_datasource > c.other_datasource * 2.0);
        // Learning off: the counts are shown, the configured weights stand.
        let off = TransitionsConfig {
            learn: false,
            ..config
        };
        let rates = TransitionRates::new(&c, &off, &[15, 12, 12, 1], observed);
        assert_eq!(rates.learned, rates.configured);
    }

    #[test]
    fn the_memory_store_adds_up() {
        let store = MemoryTransitionStore::default();
        let mut delta = TransitionCounts::default();
        delta.add(Transition::Stay);
        delta.add(Transition::OtherDatasource);
        let once = ready(store.add(delta));
        let twice = ready(store.add(delta));
        assert_eq!(once.total(), 2);
        assert_eq!(twice.stay, 2);
        assert_eq!(twice.other_datasource, 2);
    }

    /// The memory store's futures are ready at once.
    fn ready(future: BoxFuture<'_, Result<TransitionCounts>>) -> TransitionCounts {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut future = future;
        match future.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(counts) => counts.unwrap(),
            std::task::Poll::Pending => panic!("the memory store is never pending"),
        }
    }
}
