//! Bounded property-based fuzzing of the adapters' two guards against hostile input:
//!
//! - the SQL read-only check (`guard::check_read_only`): generated writes in many disguises
//!   (case, whitespace, comments, CTEs, stacked statements, `SELECT … INTO`, row locks) are
//!   always refused; arbitrary edits of them are accepted only when SQLite itself says
//!   every statement it sees is read-only; random and deeply nested text never panics it;
//! - the HTTP adapter's placeholders: hostile parameter values, sent to a server on
//!   127.0.0.1 that echoes the request, never change the scheme, host or port, stay inside
//!   their one path segment, and stay inside their one query parameter.
//!
//! Each property runs a bounded number of cases with a fixed seed (a few seconds in the
//! dev profile); `PROPTEST_CASES` and `PROPTEST_RNG_SEED` run more, or other, cases
//! (`infra/scripts/fuzz.sh`).
//!
//! The modules: `setup` (the proptest configuration), `statements` (the generated SQL:
//! writes in disguise, edits of their text, deep nesting and long chains), `read_only` (the
//! SQL read-only check's properties and the regressions they found), `placeholders` (the
//! HTTP adapter's placeholders against the echo server).

mod placeholders;
mod read_only;
mod setup;
mod statements;
