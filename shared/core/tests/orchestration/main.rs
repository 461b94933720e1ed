//! Orchestration's pure parts, through its public API: cutting, signals, choosing a split,
//! running phases and fusing. The real model's splits are tested end to end in
//! `tests/e2e/orchestration.rs`.
//!
//! The modules: `helpers` (the default configuration, tasks, answers and checkpoints),
//! `cutting` (segments at cues), `choosing` (spans and the split chosen), `detection` (the
//! signals), `fusion` (fusing the answers), `execution` (running phases and resuming),
//! `checkpoints` (checkpoints as stored).

mod checkpoints;
mod choosing;
mod cutting;
mod detection;
mod execution;
mod fusion;
mod helpers;
