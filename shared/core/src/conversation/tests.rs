use super::filter::Evidence;
use super::*;
use crate::config::Config;
use switchyard_index::scoring::Weights;
use switchyard_routing::config::Decoding;
use switchyard_routing::router::{Ranking, RerankStatus, StageScores, StageTimings};

fn template(datasource: &str, template_id: &str) -> TemplateRef {
    TemplateRef {
        datasource: datasource.into(),
        template_id: template_id.into(),
    }
}

/// The filter's step without an assistant's offer.
fn follow(
    config: &ContextConfig,
    previous: &[Weighted],
    weight: f32,
    preferred: Option<&str>,
    evidence: &[Evidence],
    power: f32,
    tilts: &[f32],
) -> Vec<Weighted> {
    super::follow(
        config,
        Prior {
            previous,
            weight,
            preferred,
            tilts,
            offer_weight: 0.0,
        },
        evidence,
        power,
    )
}

#[test]
fn an_offer_takes_its_share_of_the_prior() {
    let mut even = evidence(&[
        ("restaurants", "find_restaurants", 0.1, false),
        ("restaurants", "reserve_restaurant", 0.1, true),
    ]);
    even[1].offered = 0.9;
    let previous = [Weighted {
        datasource: "restaurants".into(),
        template_id: "find_restaurants".into(),
        probability: 1.0,
    }];
    let prior = |offer_weight| Prior {
        previous: &previous,
        weight: 1.0,
        preferred: None,
        tilts: &[],
        offer_weight,
    };
    let stays = super::follow(&config(), prior(0.0), &even, 1.0);
    assert_eq!(stays[0].template_id, "find_restaurants");
    let accepts = super::follow(&config(), prior(0.5), &even, 1.0);
    assert_eq!(accepts[0].template_id, "reserve_restaurant");
}

fn evidence(items: &[(&str, &str, f32, bool)]) -> Vec<Evidence> {
    items
        .iter()
        .map(|&(d, t, probability, action)| Evidence {
            template: template(d, t),
            probability,
            said: None,
            offered: 0.0,
            action,
        })
        .collect()
}

fn believed(d: &str, t: &str, probability: f32) -> Weighted {
    Weighted {
        datasource: d.into(),
        template_id: t.into(),
        probability,
    }
}

fn config() -> ContextConfig {
    Config::default().sessions.context
}

/// The restaurant search, its reservation, and the weather.
fn three(find: f32, reserve: f32, weather: f32) -> Vec<Evidence> {
    evidence(&[
        ("restaurants", "find_restaurants", find, false),
        ("restaurants", "reserve_restaurant", reserve, true),
        ("weather", "get_weather", weather, false),
    ])
}

#[test]
fn the_best_path_counts_one_way_into_a_template_the_marginal_every_way() {
    // Two lookups of a datasource were equally likely; both lead on to its reservation.
    let previous = [
        believed("restaurants", "find_restaurants", 0.45),
        believed("restaurants", "search_menu", 0.45),
    ];
    let even = evidence(&[
        ("restaurants", "find_restaurants", 0.3, false),
        ("restaurants", "search_menu", 0.3, false),
        ("restaurants", "reserve_restaurant", 0.3, true),
    ]);
    let reserve_per_find = |decoding| {
        let config = ContextConfig {
            decoding,
            ..config()
        };
        let belief = follow(&config, &previous, 1.0, None, &even, 1.0, &[]);
        let p = |t: &str| {
            belief
                .iter()
                .find(|b| b.template_id == t)
                .unwrap()
                .probability
        };
        p("reserve_restaurant") / p("find_restaurants")
    };
    let best_path = reserve_per_find(Decoding::BestPath);
    let marginal = reserve_per_find(Decoding::Marginal);
    // Analytically 0.27 and 0.46: the marginal adds the second lookup's way in.
    assert!(marginal > best_path + 0.1, "{marginal} {best_path}");
    assert_eq!(config().decoding, Decoding::Marginal, "the default");
}

#[test]
fn a_turn_without_evidence_stays_where_the_conversation_was() {
    let previous = [believed("restaurants", "find_restaurants", 0.9)];
    // "Sure, that is great.": the head spreads it thinly, slightly toward the weather.
    let belief = follow(
        &config(),
        &previous,
        1.0,
        None,
        &three(0.3, 0.3, 0.4),
        1.0,
        &[],
    );
    assert_eq!(belief[0].template_id, "find_restaurants", "{belief:?}");
    assert!(belief[0].probability > 0.5, "{belief:?}");
}

#[test]
fn a_clear_switch_moves_the_belief() {
    let previous = [believed("restaurants", "find_restaurants", 0.95)];
    let belief = follow(
        &config(),
        &previous,
        1.0,
        None,
        &three(0.01, 0.01, 0.98),
        1.0,
        &[],
    );
    assert_eq!(belief[0].template_id, "get_weather", "{belief:?}");
}

#[test]
fn a_lookup_leads_on_to_its_action_more_easily_than_back() {
    let forward = follow(
        &config(),
        &[believed("restaurants", "find_restaurants", 1.0)],
        1.0,
        None,
        &three(0.1, 0.9, 0.0),
        1.0,
        &[],
    );
    assert_eq!(forward[0].template_id, "reserve_restaurant", "{forward:?}");
    let back = follow(
        &config(),
        &[believed("restaurants", "reserve_restaurant", 1.0)],
        1.0,
        None,
        &three(0.9, 0.1, 0.0),
        1.0,
        &[],
    );
    assert_eq!(back[0].template_id, "reserve_restaurant", "{back:?}");
}

#[test]
fn an_old_turn_weighs_nothing() {
    let previous = [believed("restaurants", "find_restaurants", 1.0)];
    let faded = follow(
        &config(),
        &previous,
        0.0,
        None,
        &three(0.2, 0.1, 0.7),
        1.0,
        &[],
    );
    assert_eq!(faded[0].template_id, "get_weather");
    let total: f32 = faded.iter().map(|w| w.probability).sum();
    assert!((total - 1.0).abs() < 1e-5, "a distribution: {total}");
}

#[test]
fn a_preferred_datasource_tilts_a_close_call() {
    let even = three(0.33, 0.0, 0.34);
    let plain = follow(&config(), &[], 0.0, None, &even, 1.0, &[]);
    assert_eq!(plain[0].template_id, "get_weather");
    let tilted = follow(&config(), &[], 0.0, Some("restaurants"), &even, 1.0, &[]);
    assert_eq!(tilted[0].template_id, "find_restaurants");
    // The caller's topics tip the same close call, and only by their factor.
    let topical = follow(&config(), &[], 0.0, None, &even, 1.0, &[1.3, 1.0, 1.0]);
    assert_eq!(topical[0].template_id, "find_restaurants");
    let clear = three(0.2, 0.0, 0.7);
    let kept = follow(&config(), &[], 0.0, None, &clear, 1.0, &[1.5, 1.0, 1.0]);
    assert_eq!(kept[0].template_id, "get_weather", "a weak prior: {kept:?}");
}

fn turn(d: &str, t: &str, outcome: TurnOutcome) -> Turn {
    Turn {
        query: None,
        datasource: Some(d.into()),
        template_id: Some(t.into()),
        parameters: Map::new(),
        outcome,
        confidence: 0.8,
        belief: Vec::new(),
        choices: Vec::new(),
        answer: None,
        at: 0,
    }
}

#[test]
fn evidence_counts_less_the_less_the_turn_matches() {
    let c = config();
    let threshold = 0.5;
    let power = |confidence: f32| evidence_power(&c, c.informativeness(confidence, threshold));
    assert_eq!(
        power(threshold + c.informative_above_threshold),
        c.evidence_power
    );
    let low = threshold - c.uninformative_below_threshold;
    let high = threshold + c.informative_above_threshold;
    let middle = power((low + high) / 2.0);
    assert!((middle - c.evidence_power / 2.0).abs() < 1e-5, "{middle}");
    assert!(power(0.0) > 0.0, "never nothing");
    // The same confidence says less under a higher threshold (an adapted encoder's).
    assert!(power(0.6) > evidence_power(&c, c.informativeness(0.6, 0.6)));
}

#[test]
fn a_datasource_is_preferred_after_three_executed_uses() {
    let mut turns = vec![
        turn("hr", "headcount", TurnOutcome::Execute),
        turn("hr", "salary", TurnOutcome::Execute),
        turn("cars", "count", TurnOutcome::Execute),
    ];
    assert_eq!(preferred_datasource(&turns, 3), None);
    turns.push(turn("hr", "headcount", TurnOutcome::NoMatch));
    assert_eq!(
        preferred_datasource(&turns, 3),
        None,
        "only executed turns count"
    );
    turns.push(turn("hr", "headcount", TurnOutcome::Execute));
    assert_eq!(preferred_datasource(&turns, 3).as_deref(), Some("hr"));
}

#[test]
fn a_pending_question_pins_the_prior() {
    let mut pending = turn("hr", "headcount", TurnOutcome::NeedsClarification);
    pending.belief = vec![believed("cars", "count", 0.9)];
    assert_eq!(
        prior_belief(&pending),
        vec![believed("hr", "headcount", 1.0)]
    );
    let mut answered = turn("hr", "headcount", TurnOutcome::Execute);
    answered.belief = vec![believed("cars", "count", 0.9)];
    assert_eq!(prior_belief(&answered), answered.belief);
}

fn routing(order: &[(&str, &str)]) -> Routing {
    let matches = order
        .iter()
        .enumerate()
        .map(|(i, (d, t))| Match {
            datasource: (*d).into(),
            template_id: (*t).into(),
            datasource_position: 0,
            template_position: i,
            scores: StageScores {
                embedding_score: 0.5,
                learned_score: None,
                keyword_score: None,
                opening_score: None,
                rerank_score: None,
                string_similarity_score: None,
                retrieval_score: 0.5,
                rank_score: 0.5,
                combined_score: 0.5,
                probability: None,
            },
            declined_by: None,
            context_probability: None,
        })
        .collect();
    Routing {
        query: "q".into(),
        corrected: None,
        matches,
        adapters_searched: Vec::new(),
        timed_out: Vec::new(),
        selected: None,
        outcome: Outcome::NoMatch,
        choices: 0,
        threshold: 0.4,
        weights: Weights::for_stages(&Config::default().composite_retrieval, false),
        rerank: RerankStatus::Disabled,
        ranking: Ranking::Learned,
        timings: StageTimings::default(),
    }
}

#[test]
fn a_clarify_choice_is_picked_by_ordinal_or_by_name() {
    let choices = [template("bank", "balance"), template("bank", "transfer")];
    let elsewhere = routing(&[("weather", "get_weather"), ("bank", "transfer")]);
    assert_eq!(
        pick_choice("the second one", &choices, &elsewhere, true),
        Some(template("bank", "transfer"))
    );
    assert_eq!(
        pick_choice("1", &choices, &elsewhere, false),
        Some(template("bank", "balance"))
    );
    let balance_first = routing(&[("bank", "balance"), ("bank", "transfer")]);
    assert_eq!(
        pick_choice("yes, the balance", &choices, &balance_first, false),
        Some(template("bank", "balance"))
    );
    assert_eq!(
        pick_choice(
            "what will the weather be like in Paris over the weekend",
            &choices,
            &elsewhere,
            false
        ),
        None,
        "a long new question is not a pick"
    );
    assert_eq!(
        pick_choice("and the weather in Paris?", &choices, &elsewhere, true),
        None,
        "a short question sure of another template is not a pick"
    );
    assert_eq!(
        pick_choice("the transfer one", &choices, &elsewhere, false),
        Some(template("bank", "transfer"))
    );
}

#[test]
fn selecting_moves_the_choice_first_and_executes() {
    let mut r = routing(&[("a", "x"), ("b", "y")]);
    select(&mut r, &[], &template("b", "y"));
    assert_eq!(r.matches[0].template_id, "y");
    assert_eq!((r.selected, r.outcome), (Some(0), Outcome::Execute));
    let joint = routing(&[("c", "z")]);
    select(&mut r, &[&joint], &template("c", "z"));
    assert_eq!(
        r.matches[0].template_id, "z",
        "taken from the joint routing"
    );
    assert_eq!(r.matches.len(), 3);
}

/// A conversation's template that a negative example declined for this question is not
/// offered: a clarify whose first choice is declined has no best match to answer with
/// (schemathesis found the 500).
#[test]
fn a_declined_template_is_not_offered() {
    let mut own = routing(&[("bank", "balance"), ("bank", "transfer")]);
    offer(&mut own, &[], &template("bank", "transfer"));
    assert_eq!((own.outcome, own.choices), (Outcome::Clarify, 2));
    assert_eq!(own.best().unwrap().template_id, "transfer");

    let mut own = routing(&[("bank", "balance"), ("bank", "transfer")]);
    own.matches[1].declined_by = Some(switchyard_routing::router::Declined {
        negative_example: "transfer my pension".into(),
        similarity: 0.9,
        template_similarity: 0.5,
    });
    offer(&mut own, &[], &template("bank", "transfer"));
    assert_eq!(own.outcome, Outcome::NoMatch);
    assert_eq!(own.best().unwrap().template_id, "balance");
}

fn cues() -> Vec<String> {
    Config::default().sessions.context.offer_cues
}

#[test]
fn our_answer_is_evidence_only_for_what_it_asks() {
    let cues = cues();
    // An answer that only answers says nothing about the next question.
    assert_eq!(
        asked_text("Highest paid in Sales: 1. Olivia Torres (142,000)", &cues),
        None
    );
    assert_eq!(asked_text("15% of 200 is **30**", &cues), None);
    // An offer: from its sentence on.
    assert_eq!(
        asked_text(
            "15% of 200 is 30. Would you like the headcount of Sales too?",
            &cues
        )
        .as_deref(),
        Some("Would you like the headcount of Sales too?")
    );
    // A question it ends with (a clarify), whole though its choices hold points.
    assert_eq!(
        asked_text(
            "Sales has 12 people. Which did you mean: \"Count, e.g. 2.5\", or \"List\"?",
            &cues
        )
        .as_deref(),
        Some("Which did you mean: \"Count, e.g. 2.5\", or \"List\"?")
    );
    // The caller's assistant is evidence whole; ours only for what it asks.
    let text = "There are 10 restaurants in San Jose.";
    assert_eq!(Said::Whole(text).evidence(&cues).as_deref(), Some(text));
    assert_eq!(Said::OwnAnswer(text).evidence(&cues), None);
}

#[test]
fn a_turn_sure_of_itself_is_self_contained() {
    let c = config();
    let mut own = routing(&[("tools", "calculator_percentage"), ("hr", "top_paid")]);
    own.outcome = Outcome::Execute;
    own.selected = Some(0);
    own.matches[0].scores.probability = Some(c.self_contained_probability + 0.05);
    assert!(self_contained(&own, &[], &c));
    own.matches[0].scores.probability = Some(c.self_contained_probability - 0.05);
    assert!(
        !self_contained(&own, &[], &c),
        "unsure: the conversation decides"
    );
    own.matches[0].scores.probability = Some(0.99);
    own.outcome = Outcome::Clarify;
    assert!(
        !self_contained(&own, &[], &c),
        "only a turn that executes alone"
    );
}

#[test]
fn a_whole_question_on_another_datasource_needs_less_to_stand_alone() {
    let c = config();
    let hr = [turn("hr", "top_paid", TurnOutcome::Execute)];
    let between = (c.self_contained_elsewhere_probability + c.self_contained_probability) / 2.0;
    let asked = |query: &str, datasource: &str, probability: f32, outcome: Outcome| {
        let mut own = routing(&[(datasource, "some_template"), ("hr", "top_paid")]);
        own.query = query.into();
        own.outcome = outcome;
        own.selected = (outcome != Outcome::NoMatch).then_some(0);
        own.matches[0].scores.probability = Some(probability);
        own
    };
    let whole = "what is 15% of 200?";
    let execute = Outcome::Execute;
    assert!(self_contained(
        &asked(whole, "tools", between, execute),
        &hr,
        &c
    ));
    assert!(
        !self_contained(&asked(whole, "hr", between, execute), &hr, &c),
        "a sibling of the previous template needs self_contained_probability"
    );
    assert!(
        !self_contained(&asked("sounds good", "tools", between, execute), &hr, &c),
        "a few words can route anywhere"
    );
    assert!(
        !self_contained(&asked(whole, "tools", 0.95, Outcome::NoMatch), &hr, &c),
        "unexecuted, its probability says little"
    );
}

#[test]
fn a_fragment_after_a_continuation_cue_continues_and_a_whole_question_does_not() {
    let cues = config().continuation_cues;
    for fragment in [
        "And what about Berlin?",
        "and in Sales?",
        "same for kia",
        "What about 2021",
    ] {
        assert!(
            super::continues(fragment, &cues, super::FRAGMENT_WORDS),
            "{fragment}"
        );
    }
    for whole in [
        "and which teams are in chicago",
        "Andrew's salary",
        "what is 15% of 200?",
        "orders in Paris",
    ] {
        assert!(
            !super::continues(whole, &cues, super::FRAGMENT_WORDS),
            "{whole}"
        );
    }
}

#[test]
fn of_those_refers_back_as_whole_words() {
    let cues = config().reference_cues;
    assert!(super::refers_back(
        "How many OF THOSE are in Pierce County?",
        &cues
    ));
    assert!(super::refers_back("which of them is the cheapest", &cues));
    assert!(!super::refers_back("list the themes of theme parks", &cues));
    assert!(super::refers_back("and teslas there?", &cues));
    assert!(!super::refers_back("how many teslas are registered", &cues));
    // Words of an act, not of a thing: the same question again is no reference.
    assert!(!super::refers_back("same for kia", &cues));
}

#[test]
fn only_a_sure_turn_that_depends_on_nothing_stands_alone() {
    let c = config();
    let sure = |query: &str| {
        let mut own = routing(&[("tools", "calculator_percentage"), ("hr", "top_paid")]);
        own.query = query.into();
        own.outcome = Outcome::Execute;
        own.selected = Some(0);
        own.matches[0].scores.probability = Some(0.97);
        own
    };
    let answered = [turn("hr", "top_paid", TurnOutcome::Execute)];
    assert!(stands_alone(
        &sure("What is 15% of 200?"),
        &answered,
        false,
        &c
    ));
    assert!(!stands_alone(
        &sure("and 15% of 200?"),
        &answered,
        false,
        &c
    ));
    assert!(
        !stands_alone(&sure("What is 15% of 200?"), &answered, true, &c),
        "the assistant asked something before it"
    );
    for outcome in [TurnOutcome::Clarify, TurnOutcome::NeedsClarification] {
        let asked = [turn("hr", "top_paid", outcome)];
        assert!(
            !stands_alone(&sure("What is 15% of 200?"), &asked, false, &c),
            "after our {outcome:?}"
        );
    }
    let mut unsure = sure("What is 15% of 200?");
    unsure.matches[0].scores.probability = Some(c.self_contained_elsewhere_probability - 0.1);
    assert!(!stands_alone(&unsure, &answered, false, &c));
}

#[test]
fn a_whole_question_is_read_with_the_previous_one_only_when_it_points_back() {
    let sessions = Config::default().sessions;
    let previous = Turn {
        query: Some("how many teslas are registered in king county".into()),
        ..turn(
            "ev",
            "vehicles_count_by_make_in_county",
            TurnOutcome::Execute,
        )
    };
    let turns = [previous];
    let joint = |query: &str| joint_question(&turns, query, &sessions);
    // Fragments and questions that point back need the question before them.
    assert!(joint("and in pierce?").is_some());
    assert!(joint("And what about Pierce County?").is_some());
    assert!(joint("what's the top model there").is_some());
    assert!(joint("how many of them are plug-in hybrids").is_some());
    // A whole question that points nowhere says what it asks.
    assert_eq!(joint("What is 15% of 200?"), None);
    assert_eq!(joint("who earns the most in sales"), None);
    // Without the words, every question is read with the previous one, as before.
    let mut everything = Config::default().sessions;
    everything.context.anaphora_words.clear();
    assert!(joint_question(&turns, "What is 15% of 200?", &everything).is_some());
}

#[test]
fn a_turn_that_answered_our_request_is_read_as_the_question_it_completed() {
    use super::texts::previous_question;
    let mut asked = turn("hr", "top_paid", TurnOutcome::NeedsClarification);
    asked.query = Some("who are the highest paid in a department".into());
    let mut answered = turn("hr", "top_paid", TurnOutcome::Execute);
    answered.query = Some("marketing".into());
    assert_eq!(
        previous_question(&[asked.clone(), answered.clone()]).as_deref(),
        Some("who are the highest paid in a department marketing")
    );
    // After an answer, or a request of another template's, the question as asked.
    let mut other = answered.clone();
    other.template_id = Some("budget".into());
    assert_eq!(
        previous_question(&[asked.clone(), other]).as_deref(),
        Some("marketing")
    );
    assert_eq!(previous_question(&[answered]).as_deref(), Some("marketing"));
    assert_eq!(previous_question(&[]), None);
}
