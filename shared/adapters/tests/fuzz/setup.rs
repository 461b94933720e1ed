//! The proptest configuration every property runs with.

use proptest::prelude::ProptestConfig;
use proptest::test_runner::RngSeed;

/// `cases` cases with a fixed seed, unless `PROPTEST_CASES` / `PROPTEST_RNG_SEED` say
/// otherwise; no regression files (minimal failures become plain `#[test]`s).
pub(crate) fn config(cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = cases;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x5717_c4a2_d5ee_d002);
    }
    config.failure_persistence = None;
    config
}
