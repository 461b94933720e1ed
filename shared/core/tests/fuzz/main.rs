//! Bounded property-based fuzzing of what the domain crate reads from outside: index and
//! chunk artifacts (random bytes, mutated artifacts, mutated length fields, and mutations
//! re-sealed with a correct checksum so they reach the JSON and postcard decoders) and a
//! catalog's YAML files. Built on the test-only `HashingEmbedder`: no model needed.
//!
//! Each property runs 500 to 5,000 cases with a fixed seed (about two seconds in the dev
//! profile); `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more, or other, cases
//! (`infra/scripts/fuzz.sh`). The allocator counts the peak heap and caps it at 2 GiB, so
//! a length field that would allocate gigabytes aborts the run instead of passing.
//!
//! The modules: `setup` (the capped allocator, the proptest configuration, the valid
//! artifacts), `frames` (an artifact's sections, re-sealing, byte mutations, loading bytes
//! as either kind of artifact), `artifacts` (the properties on artifact bytes),
//! `regressions` (re-sealed artifacts the properties found), `yaml` (a catalog's YAML).

#[path = "../common/mod.rs"]
mod common;

mod artifacts;
mod frames;
mod regressions;
mod setup;
mod yaml;
