//! The deployment's transition rates as this instance knows them: the shared store's
//! counts as last read, plus what this instance counted since. New counts are added to
//! the store (and everyone's read back) at most every `sessions.transitions.flush_seconds`,
//! after an answer, so a route never waits on it; a store that fails keeps the counts for
//! the next try, and routing goes on with the rates it has.

use std::sync::{Arc, Mutex};

use switchyard_catalog::metric;
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::transitions::{
    Transition, TransitionCounts, TransitionRates, TransitionStore,
};

pub(super) struct LearnedTransitions {
    store: Arc<dyn TransitionStore>,
    /// The catalog's datasources' template counts (what the configured weights imply).
    templates_per_datasource: Vec<usize>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Every instance's counts, as the store last answered.
    known: TransitionCounts,
    /// Counted here since, not yet in the store.
    pending: TransitionCounts,
    /// When the store was last asked (unix seconds); never yet: `None`.
    flushed_at: Option<i64>,
}

impl LearnedTransitions {
    pub(super) fn new(
        store: Arc<dyn TransitionStore>,
        templates_per_datasource: Vec<usize>,
    ) -> Self {
        LearnedTransitions {
            store,
            templates_per_datasource,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The rates in force now.
    pub(super) fn rates(&self, sessions: &SessionsConfig) -> TransitionRates {
        let observed = {
            let state = self.state();
            state.known.plus(state.pending)
        };
        TransitionRates::new(
            &sessions.context,
            &sessions.transitions,
            &self.templates_per_datasource,
            observed,
        )
    }

    /// Count a turn's transition (if it gave one), and add the counts to the store when
    /// due: the first time, then every `flush_seconds`.
    pub(super) async fn record(
        &self,
        transition: Option<Transition>,
        sessions: &SessionsConfig,
        now: i64,
    ) {
        let delta = {
            let mut state = self.state();
            if let Some(transition) = transition {
                state.pending.add(transition);
            }
            let due = state
                .flushed_at
                .is_none_or(|at| now - at >= sessions.transitions.flush_seconds as i64);
            if !due {
                return;
            }
            // Claimed: no other request of this instance flushes meanwhile.
            state.flushed_at = Some(now);
            std::mem::take(&mut state.pending)
        };
        match self.store.add(delta).await {
            Ok(counts) => self.state().known = counts,
            Err(e) => {
                // Kept for the next flush: nothing counted is lost.
                let mut state = self.state();
                state.pending = state.pending.plus(delta);
                drop(state);
                metrics::counter!(metric::TRANSITION_STORE_ERRORS).increment(1);
                tracing::warn!(error = %e, "transition counts not saved; kept for the next try");
            }
        }
    }
}
