//! The routings a replay reads, made once: each turn alone, and every context text ("previous
//! question + this one", the assistant's turn alone and with it). The texts hardly depend
//! on the session's decisions (only a picked clarify choice or an accepted offer changes
//! the question a later turn is joined with), so replaying the same conversations with
//! other settings, or without the assistant's turns, routes only the few texts it has not
//! seen.

use std::collections::{HashMap, HashSet};

use crate::error::Result;
use switchyard_catalog::auth::Access;
use switchyard_routing::router::{Router, Routing};

use super::Line;

pub(super) struct Routings<'r> {
    router: &'r Router,
    /// Each conversation's turns alone, in line order.
    own: Vec<Vec<Routing>>,
    /// Context texts → their routings.
    texts: HashMap<String, Routing>,
}

impl<'r> Routings<'r> {
    /// Route every turn of `conversations` alone (with the vectors `eval` embedded).
    pub(super) fn new(router: &'r Router, conversations: &[Vec<Line<'_>>]) -> Result<Self> {
        let own = conversations
            .iter()
            .map(|lines| {
                lines
                    .iter()
                    .map(|l| router.route_vector(&l.query.text, l.vector, &Access::All))
                    .collect::<std::result::Result<Vec<_>, _>>()
            })
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(Routings {
            router,
            own,
            texts: HashMap::new(),
        })
    }

    /// Turn `turn` of conversation `conversation`, alone.
    pub(super) fn own(&self, conversation: usize, turn: usize) -> &Routing {
        &self.own[conversation][turn]
    }

    /// Route the texts not routed yet, in one batch.
    pub(super) fn prefetch(&mut self, texts: &[String]) -> Result<()> {
        let mut seen: HashSet<&str> = HashSet::new();
        let missing: Vec<&str> = texts
            .iter()
            .map(String::as_str)
            .filter(|t| !self.texts.contains_key(*t) && seen.insert(t))
            .collect();
        let routed = self.router.route_batch(&missing, &Access::All)?;
        for (text, routing) in missing.into_iter().zip(routed) {
            self.texts.insert(text.to_owned(), routing);
        }
        Ok(())
    }

    /// A context text's routing, once prefetched.
    pub(super) fn text(&self, text: &str) -> &Routing {
        self.texts
            .get(text)
            .expect("context texts are prefetched before they are read")
    }
}
