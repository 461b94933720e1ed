//! Conversations on the demo catalog through `switchyard serve`: follow-ups, topic switches,
//! clarify picks, missing parameters, forgetting a session. Answers come from the demo's
//! sample data (`templates/demo/hr/data/hr.sql`).

use serde_json::{json, Value};
use switchyard_e2e::{serve, Server};

struct Conversation<'a> {
    server: &'a Server,
    client: reqwest::blocking::Client,
    session_id: String,
}

impl Conversation<'_> {
    fn new<'a>(server: &'a Server, session_id: &str) -> Conversation<'a> {
        Conversation {
            server,
            client: reqwest::blocking::Client::new(),
            session_id: session_id.into(),
        }
    }

    fn send(&self, path: &str, query: &str) -> Value {
        let response = self
            .client
            .post(format!("{}{path}", self.server.base))
            .json(&json!({"query": query, "session_id": self.session_id}))
            .send()
            .unwrap();
        assert_eq!(response.status().as_u16(), 200, "{query}");
        response.json().unwrap()
    }

    fn ask(&self, query: &str) -> Value {
        self.send("/v1/query", query)
    }

    fn forget(&self) -> (u16, Value) {
        let response = self
            .client
            .delete(format!(
                "{}/v1/sessions/{}",
                self.server.base, self.session_id
            ))
            .send()
            .unwrap();
        (response.status().as_u16(), response.json().unwrap())
    }
}

fn demo() -> (tempfile::TempDir, Server) {
    let cache = tempfile::tempdir().unwrap();
    let server = serve(cache.path(), &["--templates", "templates/demo"]);
    (cache, server)
}

#[test]
fn a_follow_up_continues_and_a_clear_switch_routes_away() {
    let (_cache, server) = demo();
    let chat = Conversation::new(&server, "follow-up");
    let first = chat.ask("How many employees work in Engineering?");
    assert_eq!(
        first["content"], "14 employees work in Engineering.",
        "{first}"
    );
    assert_eq!(first["metadata"]["session"]["context"]["used"], "turn");

    // Alone, "And in Sales?" is not a question about headcount.
    let alone = Conversation::new(&server, "elsewhere").send("/v1/route", "And in Sales?");
    assert_ne!(
        alone["routing_decision"]["selected_template"], "employees_count_by_department",
        "{alone}"
    );

    let follow_up = chat.ask("And in Sales?");
    assert_eq!(
        follow_up["metadata"]["template_id"], "employees_count_by_department",
        "{follow_up}"
    );
    // 12 of the sample employees are in Sales.
    assert_eq!(
        follow_up["content"], "12 employees work in Sales.",
        "{follow_up}"
    );
    let context = &follow_up["metadata"]["session"]["context"];
    assert_eq!(context["turns"], 1, "{context}");
    assert_eq!(
        context["previous"]["template_id"],
        "employees_count_by_department"
    );
    assert!(context["weight"].as_f64().unwrap() > 0.9, "{context}");

    let switch = chat.ask("Now what is 15% of 200?");
    assert_eq!(
        switch["metadata"]["composite_routing"]["selected_adapter"],
        "tools"
    );
    assert_eq!(switch["content"], "15% of 200 is **30**", "{switch}");

    // /v1/route shows both hypotheses without recording a turn.
    let report = chat.send("/v1/route", "And in Marketing?");
    let session = &report["session"];
    assert!(session["turn"]["template_id"].is_string(), "{report}");
    assert!(session["context"]["template_id"].is_string(), "{report}");
    assert_eq!(session["turns"], 3, "{report}");
    assert!(report["all_matches"][0]["context_probability"].is_number());
}

#[test]
fn a_clarify_choice_is_resolved_by_the_next_turn() {
    // A clarify margin wider than any gap: "vehicles in King County" fits several EV
    // templates about equally, and whether its top two fall within the default 0.1 is a
    // near tie of the model's, not what this test is about.
    let cache = tempfile::tempdir().unwrap();
    let config = cache.path().join("switchyard.yaml");
    std::fs::write(&config, "composite_retrieval:\n  clarify:\n    margin: 5\n").unwrap();
    let server = serve(
        cache.path(),
        &[
            "--templates".as_ref(),
            "templates/demo".as_ref(),
            "--config".as_ref(),
            config.as_os_str(),
        ],
    );
    let chat = Conversation::new(&server, "clarify");
    let asked = chat.ask("vehicles in King County");
    assert_eq!(asked["status"], "clarify", "{asked}");
    let second = asked["choices"][1]["template_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let picked = chat.ask("the second one");
    // The second choice may also need a make, which neither turn gives: then it asks.
    assert!(
        matches!(
            picked["status"].as_str(),
            Some("ok" | "needs_clarification")
        ),
        "{picked}"
    );
    assert_eq!(
        picked["metadata"]["template_id"],
        second.as_str(),
        "{picked}"
    );
    assert_eq!(
        picked["metadata"]["session"]["context"]["used"],
        "clarify_choice"
    );
    // The county came from the question the pick clarified.
    assert_eq!(picked["parameters"]["county"], "King", "{picked}");
}

#[test]
fn a_missing_parameter_is_filled_by_the_next_turn_and_a_session_can_be_forgotten() {
    let (_cache, server) = demo();
    let chat = Conversation::new(&server, "missing");
    let asked = chat.ask("How many employees work there?");
    assert_eq!(asked["status"], "needs_clarification", "{asked}");
    let answered = chat.ask("Marketing");
    assert_eq!(
        answered["metadata"]["template_id"], "employees_count_by_department",
        "{answered}"
    );
    assert_eq!(
        answered["content"], "9 employees work in Marketing.",
        "{answered}"
    );
    assert_eq!(
        answered["metadata"]["session"]["context"]["used"],
        "pending_parameter"
    );

    let (status, body) = chat.forget();
    assert_eq!((status, &body["deleted"]), (200, &json!(true)), "{body}");
    let (status, body) = chat.forget();
    assert_eq!((status, &body["deleted"]), (200, &json!(false)), "{body}");
    let fresh = chat.ask("Marketing");
    assert_eq!(fresh["metadata"]["session"]["turns"], 0, "{fresh}");
}

#[test]
fn an_accepted_offer_routes_to_what_the_assistant_offered() {
    let (_cache, server) = demo();
    let offer = "Would you like the headcount of Sales too?";
    let (_, first) = server.post(
        "/v1/query",
        json!({"query": "What is 15% of 200?", "session_id": "offer"}),
    );
    assert_eq!(first["content"], "15% of 200 is **30**", "{first}");

    // Alone, "yes please" says nothing about headcounts.
    let (_, alone) = server.post("/v1/route", json!({"query": "yes please"}));
    assert_ne!(
        alone["routing_decision"]["selected_template"], "employees_count_by_department",
        "{alone}"
    );

    let (status, yes) = server.post(
        "/v1/query",
        json!({"query": "yes please", "session_id": "offer", "assistant": offer}),
    );
    assert_eq!(status, 200, "{yes}");
    let said = &yes["metadata"]["session"]["context"]["assistant"];
    assert_eq!(said["offers"], true, "{yes}");
    assert_eq!(
        yes["metadata"]["template_id"], said["offered"]["template_id"],
        "{yes}"
    );
    assert_eq!(
        yes["metadata"]["composite_routing"]["selected_adapter"],
        "hr"
    );
    // The department comes from the offer the turn accepted.
    assert!(yes["content"].as_str().unwrap().contains("Sales"), "{yes}");

    // Declining and asking something else routes away.
    let (_, no) = server.post("/v1/query",
        json!({"query": "no thanks, what is 15% of 200", "session_id": "offer-no", "assistant": offer}),
    );
    assert_eq!(
        no["metadata"]["template_id"], "calculator_percentage",
        "{no}"
    );
}

#[test]
fn the_sessions_last_answer_counts_only_for_what_it_asks() {
    let (_cache, server) = demo();
    let chat = Conversation::new(&server, "last-answer");
    let first = chat.ask("How many employees work in Engineering?");
    assert_eq!(
        first["metadata"]["session"]["context"]["assistant"],
        Value::Null
    );
    // "14 employees work in Engineering." asks nothing: the follow-up is the previous
    // question's, not the answer's.
    let next = chat.ask("And in Sales?");
    assert_eq!(
        next["metadata"]["session"]["context"]["assistant"],
        Value::Null,
        "{next}"
    );
    assert_eq!(
        next["metadata"]["template_id"], "employees_count_by_department",
        "{next}"
    );
    // Our answer sent back as `assistant` is known as ours; another agent's text counts.
    let (_, echoed) = server.post(
        "/v1/query",
        json!({"query": "And in Marketing?", "session_id": "last-answer",
               "assistant": next["content"]}),
    );
    assert_eq!(
        echoed["metadata"]["session"]["context"]["assistant"],
        Value::Null,
        "{echoed}"
    );
    let (_, theirs) = server.post(
        "/v1/query",
        json!({"query": "And in Marketing?", "session_id": "last-answer",
               "assistant": "I can tell you headcounts by department."}),
    );
    let said = &theirs["metadata"]["session"]["context"]["assistant"];
    assert_eq!(said["offered"]["datasource"], "hr", "{theirs}");
}

#[test]
fn a_bad_assistant_field_is_named() {
    let (_cache, server) = demo();
    for assistant in [
        json!("a".repeat(2001)),
        json!(42),
        json!(["Would you like"]),
    ] {
        let (status, body) = server.post(
            "/v1/query",
            json!({"query": "yes please", "assistant": assistant}),
        );
        assert_eq!(status, 400, "{body}");
        assert_eq!(body["error"]["field"], "assistant", "{body}");
    }
}

/// Conversations whose later questions are self-contained and follow a long answer: each
/// must be routed as it would be alone, not to the template that gave the answer. The
/// first is issue 66's: on the release before, every later turn went back to the list of
/// the highest paid.
const SWITCHES_AFTER_LONG_ANSWERS: [&[(&str, &str)]; 3] = [
    &[
        (
            "who earns the most in sales",
            "employees_top_paid_in_department",
        ),
        ("What is 15% of 200?", "calculator_percentage"),
        ("what's the date today", "datetime_now"),
        ("How many Teslas are registered?", "vehicles_count_by_make"),
    ],
    &[
        ("list everyone in Marketing", "employees_list_by_department"),
        (
            "what's the average salary in Finance",
            "salary_average_by_department",
        ),
        ("top 3 most popular EV makes", "makes_top_by_registrations"),
    ],
    &[
        (
            "does my home insurance cover flood damage?",
            "policy_question",
        ),
        (
            "how many employees are in Engineering?",
            "employees_count_by_department",
        ),
        // The follow-up after the switch continues the new topic.
        ("and in Sales?", "employees_count_by_department"),
    ],
];

/// The template an answer (or an A2A task holding one as data) names.
fn template_in(value: &Value) -> Option<String> {
    match value {
        Value::Object(map) => map
            .get("template_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| map.values().find_map(template_in)),
        Value::Array(items) => items.iter().find_map(template_in),
        _ => None,
    }
}

/// Each text sent as the next user message of one chat, with the assistant's answers in
/// the history: the answers' `switchyard` fields.
fn chat_answers<'a>(server: &Server, texts: impl IntoIterator<Item = &'a str>) -> Vec<Value> {
    let mut messages: Vec<Value> = Vec::new();
    let mut answers = Vec::new();
    for text in texts {
        messages.push(json!({"role": "user", "content": text}));
        let (status, answer) = server.post(
            "/v1/chat/completions",
            json!({"model": "switchyard", "messages": messages}),
        );
        assert_eq!(status, 200, "{answer}");
        let said = answer["choices"][0]["message"]["content"].clone();
        messages.push(json!({"role": "assistant", "content": said}));
        answers.push(answer["switchyard"].clone());
    }
    answers
}

/// Each text sent as an A2A message in the context `context_id`: the JSON-RPC results
/// (HTTP 200 and no error asserted).
fn a2a_results<'a>(
    server: &Server,
    context_id: &str,
    texts: impl IntoIterator<Item = &'a str>,
) -> Vec<Value> {
    let client = reqwest::blocking::Client::new();
    texts
        .into_iter()
        .enumerate()
        .map(|(t, text)| {
            let message = json!({
                "messageId": format!("{context_id}-{t}"),
                "contextId": context_id,
                "role": "ROLE_USER",
                "parts": [{"text": text}],
            });
            let response = client
                .post(format!("{}/a2a", server.base))
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": t, "method": "SendMessage",
                              "params": {"message": message}}))
                .send()
                .unwrap();
            assert_eq!(response.status().as_u16(), 200, "{text}");
            let body: Value = response.json().unwrap();
            assert!(body.get("error").is_none(), "{text}: {body}");
            body["result"].clone()
        })
        .collect()
}

fn assert_routed(surface: &str, expected: &[(&str, &str)], got: &[Option<String>]) {
    let wrong: Vec<String> = expected
        .iter()
        .zip(got)
        .filter(|((_, want), got)| got.as_deref() != Some(*want))
        .map(|((text, want), got)| format!("{text:?}: {got:?}, not {want}"))
        .collect();
    assert!(wrong.is_empty(), "{surface}: {wrong:#?}");
}

#[test]
fn a_self_contained_question_after_a_long_answer_switches_in_a_session() {
    let (_cache, server) = demo();
    for (n, turns) in SWITCHES_AFTER_LONG_ANSWERS.iter().enumerate() {
        let chat = Conversation::new(&server, &format!("switches-{n}"));
        let got: Vec<Option<String>> = turns
            .iter()
            .map(|(text, _)| template_in(&chat.ask(text)["metadata"]))
            .collect();
        assert_routed("/v1/query", turns, &got);
    }
    // The session's own answer offers nothing: it is not evidence about the next turn.
    let chat = Conversation::new(&server, "own-answer");
    chat.ask("who earns the most in sales");
    let next = chat.ask("What is 15% of 200?");
    assert_eq!(
        next["metadata"]["session"]["context"]["assistant"],
        Value::Null,
        "{next}"
    );
}

#[test]
fn a_self_contained_question_after_a_long_answer_switches_in_a_chat() {
    let (_cache, server) = demo();
    for turns in SWITCHES_AFTER_LONG_ANSWERS {
        let answers = chat_answers(&server, turns.iter().map(|(text, _)| *text));
        let got: Vec<Option<String>> = answers.iter().map(template_in).collect();
        assert_routed("/v1/chat/completions", turns, &got);
    }
}

#[test]
fn a_self_contained_question_after_a_long_answer_switches_in_an_a2a_context() {
    let (_cache, server) = demo();
    for (n, turns) in SWITCHES_AFTER_LONG_ANSWERS.iter().enumerate() {
        let context_id = format!("a2a-switches-{n}");
        let results = a2a_results(&server, &context_id, turns.iter().map(|(text, _)| *text));
        let got: Vec<Option<String>> = results.iter().map(template_in).collect();
        assert_routed("A2A", turns, &got);
    }
}

/// A fragment asking a new thing is its own question; one giving the previous question a
/// value continues it; a turn that refers to the previous answer ("of those") keeps its
/// values. Each: the turn alone goes elsewhere.
const FOLLOW_UPS: &[&[(&str, &str)]] = &[
    &[
        // Asks for the department ...
        (
            "who are the highest paid in a department",
            "employees_top_paid_in_department",
        ),
        ("marketing", "employees_top_paid_in_department"),
        // ... and the fragment after the answer continues the question it completed, not
        // "marketing and in ops?" (alone: nothing).
        ("and in ops?", "employees_top_paid_in_department"),
    ],
    &[
        (
            "how many evs does a county have",
            "vehicles_count_by_county",
        ),
        ("snohomish", "vehicles_count_by_county"),
        // "there" is Snohomish: the make's count in it (alone: nothing).
        ("and teslas there?", "vehicles_count_by_make_in_county"),
    ],
    &[
        (
            "how many people in marketing",
            "employees_count_by_department",
        ),
        // "them" are Marketing's people: the list, not the count again.
        ("list them", "employees_list_by_department"),
        // Another datasource's question, "that" the answer: the calculator.
        ("what's 15% of that", "calculator_percentage"),
    ],
    &[
        (
            "how many people work in Sales",
            "employees_count_by_department",
        ),
        // "there" is no reference: the turn names a city, which no template taking the
        // department reads.
        (
            "which departments are there in Chicago",
            "departments_by_location",
        ),
    ],
    &[
        ("list everyone in finance", "employees_list_by_department"),
        // "their" is the department's, but the budget is asked: not another list.
        ("and their budget?", "department_budget"),
        // A value for the budget's department: the budget again.
        ("and marketing?", "department_budget"),
    ],
    &[
        ("how many nissans are on the road", "vehicles_count_by_make"),
        // Alone, the county's count; "of those" keeps the make.
        (
            "how many of those are in pierce county",
            "vehicles_count_by_make_in_county",
        ),
    ],
];

#[test]
fn a_fragment_asking_a_new_thing_stands_alone_and_of_those_refers_back() {
    let (_cache, server) = demo();
    let alone = Conversation::new(&server, "alone")
        .send("/v1/route", "how many of those are in pierce county");
    assert_ne!(
        alone["routing_decision"]["selected_template"], "vehicles_count_by_make_in_county",
        "{alone}"
    );
    for (n, turns) in FOLLOW_UPS.iter().enumerate() {
        let chat = Conversation::new(&server, &format!("follow-ups-{n}"));
        let got: Vec<Option<String>> = turns
            .iter()
            .map(|(text, _)| template_in(&chat.ask(text)["metadata"]))
            .collect();
        assert_routed("/v1/query", turns, &got);
    }
}

/// A turn that only thanks, on every surface: answered without running the previous
/// template again (which would repeat its answer, or an action), and the session keeps no
/// turn for it, so the follow-up after it continues the question before.
const THANKS: [(&str, Option<&str>); 3] = [
    (
        "how many teslas are registered in king county",
        Some("vehicles_count_by_make_in_county"),
    ),
    ("thanks!", None),
    ("and in pierce?", Some("vehicles_count_by_make_in_county")),
];

fn assert_thanked(surface: &str, answers: &[Value]) {
    let thanks = &answers[1];
    assert_eq!(thanks["status"], "acknowledged", "{surface}: {thanks}");
    assert!(
        thanks["content"]
            .as_str()
            .is_some_and(|c| c.starts_with("You're welcome")),
        "{surface}: {thanks}"
    );
    // Nothing ran: no adapter, no template, no rows.
    for field in ["data", "parameters"] {
        assert!(thanks.get(field).is_none(), "{surface}: {thanks}");
    }
    for field in ["template_id", "adapter", "composite_routing"] {
        assert!(
            thanks["metadata"].get(field).is_none(),
            "{surface}: {thanks}"
        );
    }
    let pierce = &answers[2];
    assert_eq!(
        template_in(&pierce["metadata"]).as_deref(),
        THANKS[2].1,
        "{surface}: {pierce}"
    );
    assert_eq!(pierce["parameters"]["make"], "Tesla", "{surface}: {pierce}");
    assert_eq!(
        pierce["parameters"]["county"], "Pierce",
        "{surface}: {pierce}"
    );
}

#[test]
fn thanks_is_answered_without_running_the_previous_template_again() {
    let (_cache, server) = demo();
    let session = Conversation::new(&server, "thanks");
    let answers: Vec<Value> = THANKS.iter().map(|(text, _)| session.ask(text)).collect();
    assert_thanked("/v1/query", &answers);
    // Without a conversation there is nothing to repeat: routed as any question.
    let (status, alone) = server.post("/v1/query", json!({"query": "thanks!"}));
    assert_eq!(
        (status, &alone["status"]),
        (200, &json!("no_match")),
        "{alone}"
    );

    let answers = chat_answers(&server, THANKS.iter().map(|(text, _)| *text));
    assert_thanked("/v1/chat/completions", &answers);

    let results = a2a_results(&server, "a2a-thanks", THANKS.iter().map(|(text, _)| *text));
    let answers: Vec<Value> = results
        .iter()
        .map(|result| {
            let task = &result["task"];
            assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{result}");
            // The answer as data, in the task's artifact.
            task["artifacts"][0]["parts"]
                .as_array()
                .and_then(|parts| parts.iter().find_map(|p| p.get("data")))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    assert_thanked("A2A", &answers);
}

#[test]
fn a_new_value_the_template_cannot_read_alone_replaces_the_previous_one() {
    let (_cache, server) = demo();
    let turns = ["Who does Victoria Adams report to", "and Ivan Mueller?"];
    let session = Conversation::new(&server, "restated");
    let answers: Vec<Value> = turns.iter().map(|text| session.ask(text)).collect();
    let chat = chat_answers(&server, turns);
    for (surface, answers) in [("/v1/query", &answers), ("/v1/chat/completions", &chat)] {
        let first = &answers[0];
        assert_eq!(
            first["parameters"]["employee"], "Victoria Adams",
            "{surface}: {first}"
        );
        // Before, the session's Victoria Adams filled the parameter: her manager again.
        let next = &answers[1];
        assert_eq!(
            template_in(&next["metadata"]).as_deref(),
            Some("employee_manager"),
            "{surface}: {next}"
        );
        assert_eq!(
            next["parameters"]["employee"], "Ivan Mueller",
            "{surface}: {next}"
        );
        assert!(
            next["content"]
                .as_str()
                .is_some_and(|c| c.starts_with("Ivan Mueller reports to")),
            "{surface}: {next}"
        );
    }
}
