//! Arithmetic the calculator cannot read exactly is never answered as another operation:
//! it is computed exactly, or refused saying why (nothing computed); overflow and
//! non-finite values are named. Through the local adapters, as `serve` and the adapter
//! Lambda run them, with the demo catalog's own templates and patterns.

use std::path::{Path, PathBuf};

use serde_json::json;
use switchyard_adapters::LocalAdapters;
use switchyard_catalog::template::Catalog;
use switchyard_contract::adapter::{
    AdapterInvoker, AdapterRequest, AdapterResponse, AdapterStatus,
};

fn demo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo")
}

/// `question` run on the demo tools template `template_id`, as if routed there.
async fn ask(template_id: &str, question: &str) -> AdapterResponse {
    let catalog = Catalog::load(&demo_root()).unwrap();
    let adapters = LocalAdapters::open(catalog, Some(&demo_root()))
        .await
        .unwrap();
    let request: AdapterRequest = serde_json::from_value(json!({
        "request_id": "r", "datasource": "tools", "template_id": template_id,
        "query": question, "session_parameters": {}, "deadline_ms": 2000,
    }))
    .unwrap();
    adapters.invoke(request).await.unwrap()
}

#[tokio::test]
async fn a_power_is_refused_not_multiplied() {
    for (template, question) in [
        ("calculator_multiply", "What is 10**1000000 of 2?"),
        ("calculator_multiply", "What is 2 ^ 10 times 3?"),
        ("calculator_multiply", "What is 2 to the power of 10?"),
        ("calculator_add", "What is the square root of 16 plus 2?"),
    ] {
        let answer = ask(template, question).await;
        assert_eq!(
            answer.status(),
            AdapterStatus::Error,
            "{question}: {answer:?}"
        );
        assert!(
            answer
                .content
                .contains("an operation the calculator does not have")
                && answer.content.contains("nothing was computed"),
            "{question}: {}",
            answer.content
        );
        assert!(
            !answer.content.contains(" = "),
            "no result rendered: {}",
            answer.content
        );
    }
}

#[tokio::test]
async fn exponent_notation_is_read_and_overflow_is_named() {
    let answer = ask("calculator_multiply", "1e308 * 1e308").await;
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(answer.content.contains("overflow"), "{}", answer.content);

    let answer = ask("calculator_multiply", "What is 1e308 times 10?").await;
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(answer.content.contains("overflow"), "{}", answer.content);

    // Within range the same notation computes exactly: 2.5e3 × 4 = 10000.
    let answer = ask("calculator_multiply", "What is 2.5e3 times 4?").await;
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert!(answer.content.contains("10000"), "{}", answer.content);
}

#[tokio::test]
async fn a_number_beyond_the_largest_is_named() {
    let answer = ask("calculator_add", "What is 1e400 plus 1?").await;
    assert_ne!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert!(answer.content.contains("1e400"), "{}", answer.content);
    assert!(answer.content.contains("finite"), "{}", answer.content);
}

#[tokio::test]
async fn plain_arithmetic_still_answers() {
    let answer = ask("calculator_percentage", "What is 15% of 200?").await;
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert!(answer.content.contains("**30**"), "{}", answer.content);
    let answer = ask("calculator_multiply", "What is 12 times 30?").await;
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert!(answer.content.contains("360"), "{}", answer.content);
}

#[tokio::test]
async fn a_written_operator_of_another_operation_is_refused() {
    let answer = ask("calculator_add", "1e308 * 1e308").await;
    assert_eq!(answer.status(), AdapterStatus::Error, "{answer:?}");
    assert!(
        answer
            .content
            .contains("asks for a multiplication, not `add`"),
        "{}",
        answer.content
    );
    // A negative number is not a subtraction.
    let answer = ask("calculator_add", "What is -5 + 3?").await;
    assert_eq!(answer.status(), AdapterStatus::Ok, "{answer:?}");
    assert!(answer.content.contains("-2"), "{}", answer.content);
}
