//! What is checked on the answers of each phase, and the turns: what the answers said was
//! saved, against what the sessions table holds.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use switchyard_routing::session::Turn;

use crate::bench::Bench;
use crate::load::{adapter_of, rerank_of, saved, session_status, Phase, Reply};
use crate::moto::SESSIONS;

/// The baseline: every answer is a 200 whose turn was read and saved.
pub fn check_baseline(replies: &[Reply]) {
    for reply in replies {
        assert_eq!(reply.status, 200, "{} → {}", reply.query, reply.body);
        assert_eq!(session_status(&reply.body), "ok", "{}", reply.body);
        assert_eq!(saved(&reply.body), Some(true), "{}", reply.body);
    }
}

/// During a store outage answers continue, saying the session is unavailable (or the turn
/// not saved); once the store is back, sessions are read and turns saved again.
pub fn check_store_outage(replies: &[Reply], phase: &Phase) {
    let window = phase.windows[0];
    let degraded = replies
        .iter()
        .filter(|r| r.overlaps(window))
        .filter(|r| session_status(&r.body) == "unavailable" || saved(&r.body) == Some(false))
        .count();
    let slowest = replies
        .iter()
        .filter(|r| r.overlaps(window))
        .map(|r| r.answered - r.sent)
        .max()
        .unwrap_or_default();
    assert!(
        degraded > 0,
        "{}: no answer during the outage ({:.1} s) said the session was unavailable; the slowest took {:.1} s",
        phase.name,
        (window.1 - window.0).as_secs_f64(),
        slowest.as_secs_f64()
    );
    for reply in replies {
        assert_eq!(reply.status, 200, "{}: {}", phase.name, reply.body);
    }
    let after: Vec<&Reply> = replies.iter().filter(|r| r.after).collect();
    assert!(!after.is_empty());
    for reply in &after {
        assert_eq!(
            session_status(&reply.body),
            "ok",
            "{} after recovery: {}",
            phase.name,
            reply.body
        );
        assert_eq!(
            saved(&reply.body),
            Some(true),
            "{} after recovery: {}",
            phase.name,
            reply.body
        );
    }
    assert!(
        after
            .iter()
            .any(|r| r.body["metadata"]["session"]["turns"].as_u64() > Some(0)),
        "{}: sessions resume: a turn after recovery reads earlier turns",
        phase.name
    );
}

/// While the index pointer moves, the running app keeps serving.
pub fn check_pointer_move(replies: &[Reply]) {
    for reply in replies {
        assert_eq!(
            reply.status, 200,
            "the running app keeps serving: {}",
            reply.body
        );
        assert_eq!(session_status(&reply.body), "ok", "{}", reply.body);
    }
}

/// Answers routed to `ev` while its function failed are 502/504 adapter errors; every
/// other datasource's answers are unaffected; `ev` answers again afterwards.
pub fn check_adapter_fault(replies: &[Reply], phase: &Phase) {
    let (failing, stalling) = (phase.windows[0], phase.windows[1]);
    let mut kinds = BTreeMap::<String, usize>::new();
    for reply in replies {
        let kind = reply.kind.clone().unwrap_or_default();
        // Clarify and no_match answers name a datasource but call no adapter.
        let invoked = reply.body["metadata"].get("adapter").is_some();
        if adapter_of(&reply.body) == "ev" && invoked {
            if reply.within(failing) {
                assert_eq!(kind, "502 adapter_error", "{}", reply.body);
            }
            if reply.within(stalling) {
                assert!(
                    kind == "504 adapter_timeout" || kind == "502 adapter_error",
                    "{}",
                    reply.body
                );
            }
            if reply.sent > stalling.1 {
                assert_eq!(reply.status, 200, "ev after recovery: {}", reply.body);
            }
            *kinds.entry(kind).or_default() += 1;
        } else {
            assert_eq!(
                reply.status, 200,
                "other datasources unaffected: {}",
                reply.body
            );
        }
    }
    assert!(kinds.get("502 adapter_error") > Some(&0), "{kinds:?}");
    assert!(kinds.get("504 adapter_timeout") > Some(&0), "{kinds:?}");
}

/// With the provider down, answers continue on the other stages with `rerank.status:
/// failed`; before and after, it is applied.
pub fn check_rerank_fault(replies: &[Reply], phase: &Phase) {
    let window = phase.windows[0];
    let (mut failed, mut applied) = (0, 0);
    for reply in replies {
        assert_eq!(reply.status, 200, "{}: {}", phase.name, reply.body);
        let Some(rerank) = rerank_of(&reply.body) else {
            continue;
        };
        if reply.within(window) {
            assert_eq!(rerank["status"], "failed", "{}", reply.body);
            failed += 1;
        }
        // Under this load a search can run past its deadline and leave nothing to
        // rerank (`no_candidates`); every answer that had candidates was reranked.
        if (reply.sent > window.1 || reply.answered < window.0)
            && rerank["status"] != "no_candidates"
        {
            assert_eq!(rerank["status"], "applied", "{}", reply.body);
            applied += 1;
        }
    }
    assert!(failed > 0, "no answer while the provider was down");
    assert!(
        applied > 0,
        "no answer reranked outside the provider's outage"
    );
}

// ---------------------------------------------------------------------------------------
// Turns: what the answers said was saved, against what the table holds.

/// The turns (their questions) each session's item holds: one consistent scan of the
/// table, so the snapshot is taken in one short moment.
async fn stored_turns(dynamodb: &aws_sdk_dynamodb::Client) -> HashMap<String, Vec<String>> {
    let mut stored = HashMap::new();
    let mut start = None;
    loop {
        let page = dynamodb
            .scan()
            .table_name(SESSIONS)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .unwrap();
        for item in page.items() {
            let (Some(AttributeValue::S(session)), Some(AttributeValue::S(json))) =
                (item.get("session_id"), item.get("turns"))
            else {
                panic!("a session item without its id or turns: {item:?}");
            };
            let turns: Vec<Turn> = serde_json::from_str(json).unwrap();
            stored.insert(
                session.clone(),
                turns.into_iter().filter_map(|t| t.query).collect(),
            );
        }
        start = page.last_evaluated_key;
        if start.is_none() {
            return stored;
        }
    }
}

/// Turns lost per phase: answers in `claims` said `saved: true`, and the session's item
/// holds fewer turns of that question than such answers. Also the turns stored more often
/// than the question was asked (duplicates).
pub async fn turns_lost(
    dynamodb: &aws_sdk_dynamodb::Client,
    claims: &[&Reply],
    asked: &[Reply],
) -> (BTreeMap<usize, usize>, usize) {
    let mut claimed: HashMap<(&str, &str), Vec<usize>> = HashMap::new();
    for reply in claims {
        claimed
            .entry((&reply.session, &reply.query))
            .or_default()
            .push(reply.phase);
    }
    let mut times_asked: HashMap<(&str, &str), usize> = HashMap::new();
    for reply in asked {
        *times_asked
            .entry((&reply.session, &reply.query))
            .or_default() += 1;
    }
    let stored = stored_turns(dynamodb).await;
    let mut lost = BTreeMap::new();
    let mut duplicated = 0;
    for ((session, query), phases) in &claimed {
        let held = stored
            .get(*session)
            .map_or(0, |turns| turns.iter().filter(|q| q == query).count());
        for phase in phases.iter().skip(held) {
            *lost.entry(*phase).or_default() += 1;
        }
        if let Some(times) = times_asked.get(&(*session, *query)) {
            duplicated += held.saturating_sub(*times);
        }
    }
    (lost, duplicated)
}

/// What the turns check found: the turns lost per phase, those stored twice, those asked
/// before the kill and answered after the read-back (gone with the emulator, unchecked),
/// and how many answered as saved were read back before and after the kill.
pub struct Turns {
    pub lost: BTreeMap<usize, usize>,
    pub duplicated: usize,
    pub wiped: usize,
    pub before_kill: usize,
    pub after_kill: usize,
}

/// Every turn an answer said was saved since the kill is in the new table. (Asked
/// before the kill and answered after the check, a turn may have gone to the old one.)
pub async fn check_turns(bench: &Bench, replies: &[Reply]) -> Turns {
    let (cut, killed) = (bench.cut, bench.killed);
    let claims: Vec<&Reply> = replies
        .iter()
        .filter(|r| r.sent > killed && saved(&r.body) == Some(true))
        .collect();
    let (mut lost, duplicated) = turns_lost(&bench.admin.dynamodb, &claims, replies).await;
    for (phase, count) in &bench.lost_before_kill {
        *lost.entry(*phase).or_default() += count;
    }
    let wiped = replies
        .iter()
        .filter(|r| r.answered >= cut && r.sent <= killed && saved(&r.body) == Some(true))
        .count();
    Turns {
        lost,
        duplicated,
        wiped,
        before_kill: bench.checked_before_kill,
        after_kill: claims.len(),
    }
}
