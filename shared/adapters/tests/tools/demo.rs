//! The demo tools catalog end to end: extract, run and render each example question.

use std::path::Path;

use serde_json::Map;
use switchyard_adapters::tools;
use switchyard_adapters::tools::tool_content;
use switchyard_catalog::template::{Catalog, Template};

use crate::helpers::now;

fn demo_tools() -> Vec<Template> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../templates/demo");
    let catalog = Catalog::load(&dir).unwrap();
    let tools = catalog.datasource("tools").expect("a `tools` datasource");
    assert!(!tools.templates.is_empty());
    tools.templates.clone()
}

/// Extract, run and render one question against one template.
fn answer(template: &Template, question: &str) -> Result<String, String> {
    let extraction = switchyard_text::params::extract(template, question, &Map::new());
    if !extraction.missing.is_empty() || !extraction.invalid.is_empty() {
        return Err(format!(
            "missing {:?}, invalid {:?}",
            extraction.missing, extraction.invalid
        ));
    }
    let outcome = tools::run(template, &extraction.parameters, now()).map_err(|e| e.to_string())?;
    tool_content(template, &extraction.parameters, &outcome).map_err(|e| e.to_string())
}

#[test]
fn every_demo_template_answers_its_first_example() {
    for template in demo_tools() {
        let example = &template.nl_examples[0];
        let content = answer(&template, example)
            .unwrap_or_else(|e| panic!("{} on {example:?}: {e}", template.id));
        assert!(!content.trim().is_empty(), "{}: empty answer", template.id);
    }
}

#[test]
fn every_demo_example_runs() {
    let mut failures = Vec::new();
    for template in demo_tools() {
        for example in &template.nl_examples {
            if let Err(e) = answer(&template, example) {
                failures.push(format!("{} on {example:?}: {e}", template.id));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn demo_answers_read_exactly() {
    let templates = demo_tools();
    let by_id = |id: &str| {
        templates
            .iter()
            .find(|t| t.id == id)
            .unwrap_or_else(|| panic!("no template {id}"))
    };
    let cases = [
        (
            "calculator_percentage",
            "What is 15% of 200?",
            "15% of 200 is **30**",
        ),
        ("calculator_add", "What is 12 plus 30?", "12 + 30 = **42**"),
        (
            "calculator_subtract",
            "Subtract 45 from 230",
            "230 - 45 = **185**",
        ),
        (
            "calculator_multiply",
            "What is 7 times 8?",
            "7 × 8 = **56**",
        ),
        (
            "calculator_divide",
            "What is 144 divided by 12?",
            "144 ÷ 12 = **12**",
        ),
        (
            "calculator_average",
            "What is the average of 4, 8, 15 and 42?",
            "The average of 4, 8, 15 and 42 is **17.25**",
        ),
        (
            "calculator_round",
            "Round 3.14159 to 2 decimal places",
            "3.14159 rounded to 2 decimal places is **3.14**",
        ),
        (
            "datetime_now",
            "What time is it?",
            "It is currently **2024-03-15 12:30:00 UTC**",
        ),
        (
            "datetime_days_between",
            "How many days between 2024-01-01 and 2024-03-15?",
            "There are **74** days between 2024-01-01 and 2024-03-15.",
        ),
        (
            "datetime_add_days",
            "What date is 2 days after 2024-02-28?",
            "2 days after 2024-02-28 is **2024-03-01**",
        ),
        (
            "datetime_format_date",
            "Format 2024-07-04 as a long date",
            "2024-07-04 formatted is **July 04, 2024**",
        ),
        (
            "datetime_format_date",
            "Convert 2024-03-15 to the format \"%d/%m/%Y\"",
            "2024-03-15 formatted is **15/03/2024**",
        ),
        (
            "datetime_day_of_week",
            "What day of the week is 2024-03-15?",
            "2024-03-15 is a **Friday**",
        ),
    ];
    for (id, question, expected) in cases {
        assert_eq!(answer(by_id(id), question).unwrap(), expected, "{question}");
    }
}
