//! How each fault is injected, and recovered from, while the clients run: moto paused,
//! moto killed and restarted, the index pointer moved, the `ev` function failing, the
//! rerank provider down.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use switchyard_aws::index::IndexPublishing;
use switchyard_core::config::Config;
use switchyard_index::index::Index;
use switchyard_router::app;
use switchyard_s3::S3IndexStore;

use crate::bench::{region, Bench};
use crate::checks::turns_lost;
use crate::fakes::{
    serve_reranker, FakeReranker, Provider, FAILING, HEALTHY, RERANK_ERROR, RERANK_SLOW, STALLING,
};
use crate::load::{saved, send, Load, Reply};
use crate::moto::{probe_client, provision, BUCKET, PREFIX};
use crate::setup::sha256_hex;

async fn health(app: &axum::Router) -> Value {
    let (status, body) = send(app.clone(), "GET", "/v1/health", None).await;
    assert_eq!(status, 200);
    body.unwrap()
}

/// When a fault held, and what is worth saying about it.
pub type Injected = (Vec<(Instant, Instant)>, Vec<String>);

impl Bench {
    /// moto stopped (SIGSTOP) for 3 s a quarter into the phase, then continued.
    pub async fn pause_moto(&self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        self.moto.pause();
        tokio::time::sleep(Duration::from_secs(3)).await;
        self.moto.resume();
        let to = Instant::now();
        let probe = probe_client(&self.moto.url).await;
        while probe.list_tables().send().await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        (vec![(from, to)], vec![])
    }

    /// moto killed a quarter into the phase, started again a second later on the same
    /// port, empty; the harness re-creates the bucket, the index and the tables. The turns
    /// saved until then are read back first: the restart wipes them.
    pub async fn kill_moto(&mut self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        self.cut = Instant::now();
        let replies: Vec<Reply> = load.replies.lock().unwrap().clone();
        let claims: Vec<&Reply> = replies
            .iter()
            .filter(|r| r.answered < self.cut && saved(&r.body) == Some(true))
            .collect();
        self.checked_before_kill = claims.len();
        // Questions still in flight may be stored already: duplicates are counted at the end.
        self.lost_before_kill = turns_lost(&self.admin.dynamodb, &claims, &[]).await.0;
        self.moto.kill();
        self.killed = Instant::now();
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.moto.spawn().await;
        self.admin = region(&self.moto).await;
        provision(&self.admin.s3, &self.admin.dynamodb, &self.index_a).await;
        let ready = Instant::now();
        let note = format!(
            "moto down {:.1} s (killed, restarted, bucket, index and tables re-created)",
            (ready - self.killed).as_secs_f64()
        );
        (vec![(self.killed, ready)], vec![note])
    }

    /// The pointer moved to index B a quarter into the phase: a new cold start serves it
    /// and traffic moves to it. Half-way, corrupt artifacts behind the pointer: cold
    /// starts are refused, the running app keeps serving. Then B is published again.
    pub async fn move_pointer(&self, load: &Load) -> Injected {
        let store = S3IndexStore::new(self.admin.s3.clone(), BUCKET, PREFIX);
        let templates_of = |bytes: &[u8]| {
            Index::from_bytes(bytes, "test")
                .unwrap()
                .catalog
                .template_count()
        };
        let (templates_a, templates_b) = (templates_of(&self.index_a), templates_of(&self.index_b));
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        let pointer_b = store.push(&self.index_b).await.unwrap();
        let (service, report) = self.cold_start(Config::default()).await.unwrap();
        assert_eq!(report.index_bytes, self.index_b.len());
        let app_b = app(service);
        assert_eq!(health(&app_b).await["templates"], templates_b);
        let running = load.target.read().unwrap().clone();
        assert_eq!(health(&running).await["templates"], templates_a);
        load.switch_to(app_b);
        let mut notes = vec![format!(
            "a new cold start serves the new artifact ({templates_b} templates, was {templates_a}); traffic moved to it"
        )];

        load.answered(load.total() / 2, Duration::from_secs(30))
            .await;
        let mut corrupt = self.index_b.clone();
        let middle = corrupt.len() / 2;
        corrupt[middle] ^= 0xff;
        let put = |key: String, bytes: Vec<u8>| {
            self.admin
                .s3
                .put_object()
                .bucket(BUCKET)
                .key(key)
                .body(bytes.into())
                .send()
        };
        // (a) The pointer names a corrupt artifact, with that artifact's own hash (a
        // pointer written by hand, or by a tool that does not check what it publishes).
        let key = format!("{PREFIX}/corrupt.idx");
        put(key.clone(), corrupt.clone()).await.unwrap();
        let pointer = json!({"key": key, "sha256": sha256_hex(&corrupt), "bytes": corrupt.len()});
        put(store.pointer_key(), pointer.to_string().into_bytes())
            .await
            .unwrap();
        let refused = self.refused_cold_start().await;
        assert!(
            refused.contains(&format!("s3://{BUCKET}/{key}")),
            "{refused}"
        );
        assert!(refused.contains("checksum mismatch"), "{refused}");
        notes.push(format!(
            "a corrupt artifact named by the pointer: cold start refused: `{refused}`"
        ));
        // (b) The artifact the pointer names overwritten with corrupt bytes.
        store.push(&self.index_b).await.unwrap();
        put(pointer_b.key.clone(), corrupt).await.unwrap();
        let refused = self.refused_cold_start().await;
        assert!(
            refused.contains(&format!("s3://{BUCKET}/{}", pointer_b.key)),
            "{refused}"
        );
        assert!(refused.contains("does not match the pointer"), "{refused}");
        notes.push(format!(
            "the artifact overwritten under the pointer: cold start refused: `{refused}`"
        ));
        // Published again, it loads again.
        store.push(&self.index_b).await.unwrap();
        let (_, report) = self.cold_start(Config::default()).await.unwrap();
        assert_eq!(report.index_bytes, self.index_b.len());
        notes.push("published again, it loads again; the running app answered throughout".into());
        (vec![(from, Instant::now())], notes)
    }

    /// The `ev` function fails (a function error, a 500, alternately) from a quarter to
    /// half-way, then stalls (past the 5 s deadline plus the invoke grace) until
    /// three quarters, or 12 s; then it is healthy again.
    pub async fn fail_ev(&self, load: &Load) -> Injected {
        load.answered(load.total() / 4, Duration::from_secs(30))
            .await;
        let from = Instant::now();
        self.ev_mode.store(FAILING, Ordering::SeqCst);
        load.answered(load.total() / 2, Duration::from_secs(30))
            .await;
        let failing = (from, Instant::now());
        self.ev_mode.store(STALLING, Ordering::SeqCst);
        load.answered(3 * load.total() / 4, Duration::from_secs(12))
            .await;
        self.ev_mode.store(HEALTHY, Ordering::SeqCst);
        let stalling = (failing.1, Instant::now());
        (vec![failing, stalling], vec![])
    }
}

/// From a fifth of the phase the provider answers 500, from two fifths too slowly (3 s,
/// past the 1 s timeout), from three fifths it no longer listens; from four fifths it
/// answers again, on the same port (the provider running then is returned too).
pub async fn take_reranker_down(
    load: &Load,
    reranker: &Arc<FakeReranker>,
    running: Provider,
    restarted: &mut Option<Provider>,
) -> Injected {
    let (port, stop, server) = running;
    let step = load.total() / 5;
    load.answered(step, Duration::from_secs(30)).await;
    let from = Instant::now();
    reranker.mode.store(RERANK_ERROR, Ordering::SeqCst);
    load.answered(2 * step, Duration::from_secs(30)).await;
    reranker.mode.store(RERANK_SLOW, Ordering::SeqCst);
    load.answered(3 * step, Duration::from_secs(30)).await;
    stop.send(()).unwrap();
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("the provider stops")
        .unwrap();
    load.answered(4 * step, Duration::from_secs(30)).await;
    reranker.mode.store(HEALTHY, Ordering::SeqCst);
    *restarted = Some(serve_reranker(reranker.clone(), port).await);
    (vec![(from, Instant::now())], vec![])
}
