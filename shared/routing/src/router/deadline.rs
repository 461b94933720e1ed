//! Waiting for work no longer than a deadline: `search_timeout_ms`. Each job runs on
//! rayon's pool owning what it reads, so the caller can stop waiting at the deadline and
//! leave a late job to finish alone; its result is dropped. Nothing interrupts a running
//! job, but one not started by the deadline does no work.

use std::sync::mpsc::{self, Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Instant;

/// What came back by the deadline, in the items' order, and the items that did not.
pub(super) struct Gathered<T> {
    pub done: Vec<T>,
    pub late: Vec<usize>,
}

/// `work` on each of `items` on the current rayon pool (one job each when `parallel`,
/// else one job taking them in turn), waited for until `deadline`.
pub(super) fn gather<T, F>(
    items: &[usize],
    parallel: bool,
    deadline: Instant,
    work: F,
) -> Gathered<T>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Send + Sync + 'static,
{
    let numbered: Vec<(usize, usize)> = items.iter().copied().enumerate().collect();
    let jobs: Vec<Vec<(usize, usize)>> = if parallel {
        numbered.into_iter().map(|item| vec![item]).collect()
    } else {
        vec![numbered]
    };
    let work = Arc::new(work);
    let (results, received) = mpsc::channel();
    for job in jobs.into_iter().filter(|job| !job.is_empty()) {
        let (results, work) = (results.clone(), work.clone());
        rayon::spawn(move || {
            for (position, item) in job {
                if Instant::now() >= deadline {
                    return;
                }
                let result = work(item);
                // A result past the deadline is late even if it reaches the channel first.
                if Instant::now() > deadline || results.send((position, result)).is_err() {
                    return;
                }
            }
        });
    }
    drop(results);
    let mut slots: Vec<Option<T>> = items.iter().map(|_| None).collect();
    for _ in 0..items.len() {
        match next(&received, deadline) {
            Some((position, result)) => slots[position] = Some(result),
            None => break,
        }
    }
    let late = items
        .iter()
        .zip(&slots)
        .filter(|(_, slot)| slot.is_none())
        .map(|(&item, _)| item)
        .collect();
    Gathered {
        done: slots.into_iter().flatten().collect(),
        late,
    }
}

/// The next result, or `None` at the deadline.
fn next<T>(received: &Receiver<T>, deadline: Instant) -> Option<T> {
    loop {
        match received.try_recv() {
            Ok(result) => return Some(result),
            Err(TryRecvError::Disconnected) => return None,
            Err(TryRecvError::Empty) => {}
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        // A caller on a pool thread must not block it: with every thread waiting so, the
        // jobs waited for would never run. It runs pending jobs instead (its own included,
        // which it then cannot cut short), and blocks only when the pool has none.
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => continue,
            Some(rayon::Yield::Idle) | None => return received.recv_timeout(left).ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    /// What a loaded two-core machine may add to the deadline.
    const MARGIN: Duration = Duration::from_millis(200);
    const SLOW: Duration = Duration::from_millis(1500);

    fn slow_at(slow: usize, ran: Arc<AtomicUsize>) -> impl Fn(usize) -> usize + Send + Sync {
        move |item| {
            ran.fetch_add(1, Ordering::SeqCst);
            if item == slow {
                std::thread::sleep(SLOW);
            }
            item * 10
        }
    }

    #[test]
    fn a_slow_item_is_left_out_at_the_deadline() {
        let deadline = Duration::from_millis(100);
        let began = Instant::now();
        // The slow one last: with a one-thread pool the others still run first.
        let ran = Arc::new(AtomicUsize::new(0));
        let gathered = gather(&[3, 4, 5], true, began + deadline, slow_at(5, ran));
        assert!(began.elapsed() < deadline + MARGIN, "{:?}", began.elapsed());
        assert_eq!(gathered.done, [30, 40]);
        assert_eq!(gathered.late, [5]);
    }

    #[test]
    fn in_turn_items_not_started_by_the_deadline_do_no_work() {
        let deadline = Duration::from_millis(100);
        let began = Instant::now();
        let ran = Arc::new(AtomicUsize::new(0));
        let gathered = gather(&[3, 4, 5], false, began + deadline, slow_at(4, ran.clone()));
        assert!(began.elapsed() < deadline + MARGIN, "{:?}", began.elapsed());
        assert_eq!(gathered.done, [30]);
        assert_eq!(gathered.late, [4, 5]);
        std::thread::sleep(SLOW + MARGIN);
        assert_eq!(
            ran.load(Ordering::SeqCst),
            2,
            "5 was searched after the deadline"
        );
    }

    #[test]
    fn a_caller_on_the_only_pool_thread_runs_the_jobs_itself() {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let ran = Arc::new(AtomicUsize::new(0));
        let gathered = pool.install(|| gather(&[1, 2, 3], true, deadline, slow_at(99, ran)));
        assert_eq!(gathered.done, [10, 20, 30]);
        assert!(gathered.late.is_empty());
    }
}
