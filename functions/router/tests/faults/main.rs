//! Faults during load, on the real emulators (issue 15, item 2). The router Lambda's app runs
//! in this process against a `moto_server` of its own (S3 and DynamoDB, started on a free
//! port of 127.0.0.1 and killed on drop, so the shared emulators other tests use are never
//! disturbed) and the shared `cargo lambda watch` (`SWITCHYARD_TEST_LAMBDA_URL`), reached
//! through a small Lambda endpoint of this test that can make one datasource's function
//! fail or stall. Eight clients hold conversations of a few turns on the demo catalog
//! (`SWITCHYARD_FAULT_REQUESTS` requests each per phase, 8 by default) while one fault at
//! a time is injected:
//!
//! 1. none (the baseline);
//! 2. moto paused (SIGSTOP), then resumed (SIGCONT);
//! 3. moto killed and restarted, its tables, bucket and index re-created (a region
//!    recovering);
//! 4. the index pointer moved to a new artifact (a new cold start serves it, and traffic
//!    moves to it), then to corrupt artifacts (cold starts refused, naming them; the
//!    running app keeps serving), then published again;
//! 5. the `ev` datasource's adapter function failing (a function error, a 500), then
//!    timing out, then healthy again;
//! 6. the rerank provider answering 500, then too slowly, then not listening, then back.
//!
//! Every answer must be JSON of the documented shape, with no panic and no 500; a turn
//! whose answer said it was saved must be in the sessions table afterwards (turns lost:
//! 0). The table of the run is printed (`--nocapture`); `./infra/scripts/faults.sh` runs
//! it with more requests.
//!
//! The modules: `setup` (process-wide counters and shared set-up), `moto` (the moto_server
//! of this test), `fakes` (the Lambda proxy and the rerank provider), `load` (clients,
//! phases, answers and their kinds), `bench` (what the faults act on), `inject` (how each
//! fault is injected), `checks` (what is checked after each phase, and the turns lost),
//! `table` (the printed table).

mod bench;
mod checks;
mod fakes;
mod inject;
mod load;
mod moto;
mod setup;
mod table;

use std::sync::Arc;
use std::time::Instant;

use bench::Bench;
use checks::{
    check_adapter_fault, check_baseline, check_pointer_move, check_rerank_fault,
    check_store_outage, check_turns,
};
use fakes::{serve_reranker, FakeReranker};
use inject::take_reranker_down;
use load::{requests_per_client, run_phase, Reply};
use setup::{count_panics, endpoint};
use table::print_table;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_during_load_keep_answers_well_formed_and_turns_kept() {
    count_panics();
    let lambda_url = endpoint("SWITCHYARD_TEST_LAMBDA_URL");
    let requests = requests_per_client();
    let started = Instant::now();
    let scratch = tempfile::tempdir().unwrap();
    let (mut bench, load) = Bench::start(&lambda_url, scratch.path(), requests).await;
    let setup = started.elapsed();
    let mut phases = Vec::new();

    let none = async { (vec![], vec![]) };
    phases.push(run_phase(&load, 0, "none (baseline)", "base", none).await);
    check_baseline(&load.replies_of(0));

    let name = "moto paused (SIGSTOP 3 s), resumed";
    let phase = run_phase(&load, 1, name, "pause", bench.pause_moto(&load)).await;
    check_store_outage(&load.replies_of(1), &phase);
    phases.push(phase);

    let name = "moto killed, restarted, tables re-created";
    let phase = run_phase(&load, 2, name, "kill", bench.kill_moto(&load)).await;
    check_store_outage(&load.replies_of(2), &phase);
    phases.push(phase);

    let name = "index pointer moved: new, then corrupt artifacts";
    let phase = run_phase(&load, 3, name, "pointer", bench.move_pointer(&load)).await;
    check_pointer_move(&load.replies_of(3));
    phases.push(phase);

    let name = "ev adapter failing, then timing out";
    let phase = run_phase(&load, 4, name, "adapter", bench.fail_ev(&load)).await;
    check_adapter_fault(&load.replies_of(4), &phase);
    phases.push(phase);

    let reranker = Arc::new(FakeReranker::default());
    let provider = serve_reranker(reranker.clone(), 0).await;
    load.switch_to(bench.reranking_app(provider.0).await);
    let mut restarted = None;
    let name = "rerank provider: 500, slow, port closed";
    let down = take_reranker_down(&load, &reranker, provider, &mut restarted);
    let phase = run_phase(&load, 5, name, "rerank", down).await;
    check_rerank_fault(&load.replies_of(5), &phase);
    phases.push(phase);
    drop(restarted);

    let replies: Vec<Reply> = load.replies.lock().unwrap().clone();
    let turns = check_turns(&bench, &replies).await;
    let checked = turns.before_kill + turns.after_kill;

    print_table(&phases, &replies, &turns.lost, requests);
    println!(
        "\n{checked} turns answered as saved were read back from the sessions table ({} before the kill, {} after it); {} asked before the kill and answered after that read went with the emulator, unchecked; {} stored twice. Set-up {:.1} s, total {:.1} s.",
        turns.before_kill,
        turns.after_kill,
        turns.wiped,
        turns.duplicated,
        setup.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );

    for reply in &replies {
        assert!(
            reply.kind.is_ok(),
            "malformed answer to {}: {:?} {}",
            reply.query,
            reply.kind,
            reply.body
        );
        assert_ne!(reply.status, 500, "{}", reply.body);
    }
    for phase in &phases {
        assert_eq!(phase.panics, 0, "panics during {}", phase.name);
    }
    let lost = &turns.lost;
    assert!(lost.values().all(|n| *n == 0), "turns lost: {lost:?}");
    assert!(checked > 0);
}
