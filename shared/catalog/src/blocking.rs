//! Work that holds its thread (embedding and scoring a question, an in-process SQLite
//! query) inside async code. On a multi-threaded runtime the worker first hands its other
//! tasks to another thread (`block_in_place`), so the runtime still accepts, admits and
//! refuses requests while it runs; elsewhere (a current-thread runtime, no runtime) it runs
//! in place. Only this part of a request leaves the worker: the rest stays async.

use tokio::runtime::{Handle, RuntimeFlavor};

/// Run `work`, holding this thread, without holding up the runtime's other tasks.
pub fn run_blocking<T>(work: impl FnOnce() -> T) -> T {
    let multi_thread =
        Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}
