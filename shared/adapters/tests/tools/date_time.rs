//! date_time: the injected clock, date arithmetic, formats, parsing, and bad dates named.

use serde_json::json;

use crate::helpers::{ok, parameter_error, tool_error};

#[test]
fn now_uses_the_injected_clock() {
    assert_eq!(
        ok("date_time", "now", json!({})),
        json!("2024-03-15 12:30:00 UTC")
    );
    assert_eq!(
        ok("date_time", "now", json!({"format": "%A %d.%m.%Y"})),
        json!("Friday 15.03.2024")
    );
}

#[test]
fn days_between_and_diff() {
    let span = json!({"start_date": "2024-01-01", "end_date": "2024-03-15"});
    assert_eq!(ok("date_time", "days_between", span.clone()), json!(74));
    assert_eq!(ok("date_time", "diff", span), json!(74));
    assert_eq!(
        ok(
            "date_time",
            "days_between",
            json!({"start_date": "2023-01-01", "end_date": "2022-11-24"})
        ),
        json!(-38)
    );
    // Written dates are accepted too.
    assert_eq!(
        ok(
            "date_time",
            "diff",
            json!({"start_date": "March 1, 2024", "end_date": "15.03.2024"})
        ),
        json!(14)
    );
}

#[test]
fn add_days_crosses_months_and_leap_days() {
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-02-28", "days": 2})
        ),
        json!("2024-03-01")
    );
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-03-01", "days": -1})
        ),
        json!("2024-02-29")
    );
    assert_eq!(
        ok(
            "date_time",
            "add_days",
            json!({"date": "2024-01-01", "days": 90})
        ),
        json!("2024-03-31")
    );
    let message = tool_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": 1_000_000_000_000_i64}),
    );
    assert!(
        message.contains("outside the supported date range"),
        "{message}"
    );
    let message = tool_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": i64::MAX}),
    );
    assert!(message.contains("outside"), "{message}");
    let (name, _) = parameter_error(
        "date_time",
        "add_days",
        json!({"date": "2024-01-01", "days": 1e300}),
    );
    assert_eq!(name, "days");
    let (name, _) = parameter_error("date_time", "add_days", json!({"date": "2024-01-01"}));
    assert_eq!(name, "days");
}

#[test]
fn format_with_default_and_custom_patterns() {
    assert_eq!(
        ok("date_time", "format", json!({"date": "2024-07-04"})),
        json!("July 04, 2024")
    );
    assert_eq!(
        ok(
            "date_time",
            "format",
            json!({"date": "2024-03-15", "format": "%d/%m/%Y"})
        ),
        json!("15/03/2024")
    );
    assert_eq!(
        ok(
            "date_time",
            "format_date",
            json!({"date": "2024-03-15", "format": "%a %-d %b"})
        ),
        json!("Fri 15 Mar")
    );
    for bad in ["%Q", "%H:%M", "%"] {
        let message = tool_error(
            "date_time",
            "format",
            json!({"date": "2024-03-15", "format": bad}),
        );
        assert!(message.contains(bad), "{message}");
    }
}

#[test]
fn parse_accepts_common_spellings() {
    for spelling in [
        "2024-03-15",
        "2024/03/15",
        "15.03.2024",
        "March 15, 2024",
        "15 March 2024",
        "Mar 15 2024",
        "mar 15, 2024",
        "15th March 2024",
        "March 15th, 2024",
        "Friday, March 15, 2024",
        "2024-03-15T08:00:00Z",
        "today",
    ] {
        assert_eq!(
            ok("date_time", "parse", json!({"date": spelling})),
            json!("2024-03-15"),
            "{spelling}"
        );
    }
    assert_eq!(
        ok("date_time", "parse", json!({"date": "tomorrow"})),
        json!("2024-03-16")
    );
}

#[test]
fn day_of_week() {
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "2024-03-15"})),
        json!("Friday")
    );
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "2000-01-01"})),
        json!("Saturday")
    );
    assert_eq!(
        ok("date_time", "day_of_week", json!({"date": "1969-07-20"})),
        json!("Sunday")
    );
}

#[test]
fn bad_dates_are_named() {
    for bad in ["2024-13-45", "2023-02-29", "someday", ""] {
        let message = tool_error("date_time", "day_of_week", json!({"date": bad}));
        assert!(message.contains(&format!("`{bad}`")), "{message}");
    }
    let message = tool_error(
        "date_time",
        "days_between",
        json!({"start_date": "2024-01-01", "end_date": "31/31/2024"}),
    );
    assert!(message.contains("31/31/2024"), "{message}");
    let (name, _) = parameter_error(
        "date_time",
        "days_between",
        json!({"start_date": "2024-01-01"}),
    );
    assert_eq!(name, "end_date");
    let message = tool_error("date_time", "tomorrow", json!({}));
    assert!(
        message.contains("unknown operation `tomorrow`"),
        "{message}"
    );
}
