//! Built-in tools and response rendering: every operation's value, the refusals, and the
//! demo tools catalog end to end (extract → run → render).
//!
//! The modules: `helpers` (one operation run with a fixed clock, and the errors it answers
//! with), `calculator`, `date_time` and `json_transform` (each tool's operations),
//! `dispatch` (unknown tools, a missing operation, odd inputs), `rendering` (response
//! templates and tool content), `demo` (the demo tools catalog, end to end), `exactness`
//! (arithmetic the calculator cannot read exactly: refused or computed, overflow named).

mod calculator;
mod date_time;
mod demo;
mod dispatch;
mod exactness;
mod helpers;
mod json_transform;
mod rendering;
