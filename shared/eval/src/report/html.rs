//! The report's page: the figures of [`super`] laid out as HTML with inline SVG and CSS.

use std::fmt::Write;

use super::escape::escape;
use super::svg::{Plot, Series};
use super::{at_threshold, confusions, per_template, reliability, risk_coverage, Page, Snapshot};
use crate::conversation::TurnAccuracy;

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1120px;color:#1d2430;padding:0 16px}\
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #d8dde6;padding-bottom:4px}\
.notes{color:#5b6575;margin:0 0 12px}table{border-collapse:collapse;margin:6px 0}\
td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eef0f4;vertical-align:top}th{background:#f5f7fa}\
td.n{text-align:right;font-variant-numeric:tabular-nums}.charts{display:flex;flex-wrap:wrap;gap:12px}\
figure{margin:0;border:1px solid #e3e7ee;border-radius:6px;padding:6px}figcaption{font-size:12px;color:#5b6575;max-width:520px}\
.axis{stroke:#4a5466;fill:none}.grid{stroke:#eef0f4;fill:none}.tick{font-size:10px;fill:#5b6575}.label{font-size:11px;fill:#1d2430}\
path.series{fill:none;stroke-width:2}.now{stroke:#2563eb}.before{stroke:#9aa3b2;stroke-dasharray:5 4}\
.second{stroke:#d97706}.ideal{stroke:#9aa3b2;stroke-dasharray:3 3}.bar.now{fill:#60a5fa;stroke:none}\
.marker{stroke:#dc2626;fill:#dc2626}path.marker{fill:none}.marker-label{font-size:11px;fill:#dc2626}.key{display:inline-block;width:14px;height:3px;margin:0 4px 3px 8px;vertical-align:middle}\
.key.now{background:#2563eb}.key.before{background:#9aa3b2}.key.second{background:#d97706}.key.ideal{background:#9aa3b2}\
.meter{display:inline-block;height:9px;background:#60a5fa;vertical-align:middle;margin-right:6px}.q{color:#5b6575}\
.up{color:#15803d}.down{color:#b91c1c}";

/// The whole page.
pub fn render(page: &Page) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body><h1>{}</h1>",
        escape(&page.title),
        escape(&page.title)
    );
    for note in &page.notes {
        let _ = write!(out, "<p class=\"notes\">{}</p>", escape(note));
    }
    figures(&mut out, page);
    charts(&mut out, page);
    templates(&mut out, page);
    confused(&mut out, page.now);
    if let Some(conversation) = page.conversation {
        out.push_str("<h2>Conversations</h2>");
        let _ = write!(
            out,
            "<p>{} conversations, {} turns ({} first, {} continuing, {} switching, {} short).</p>",
            conversation.sessions,
            conversation.turns.all,
            conversation.turns.first,
            conversation.turns.continuing,
            conversation.turns.switching,
            conversation.turns.short
        );
        out.push_str("<table><tr><th>Replayed</th><th>all</th><th>first</th><th>continuing</th><th>switching</th><th>short</th></tr>");
        let mut rows: Vec<(&str, &TurnAccuracy)> = Vec::new();
        if let Some(with) = &conversation.with_session {
            rows.push(("with the session (and the assistant's turn)", with));
        }
        if let Some(without) = &conversation.without_assistant {
            rows.push(("with the session, without the assistant's turn", without));
        }
        rows.push(("each turn alone", &conversation.without_session));
        if let Some(oracle) = &conversation.oracle {
            rows.push(("perfect stay/switch decisions (the ceiling)", oracle));
        }
        for (name, a) in rows {
            let _ = write!(
                out,
                "<tr><td>{}</td>{}{}{}{}{}</tr>",
                escape(name),
                pct_cell(a.all),
                pct_cell(a.first),
                pct_cell(a.continuing),
                pct_cell(a.switching),
                pct_cell(a.short)
            );
        }
        out.push_str("</table>");
        if let Some(e) = &conversation.errors {
            let _ = write!(
                out,
                "<p>Wrong turns with the session, as shares of all turns: first turn {}, a wrong state carried since the first turn {} or since a later one {}, stayed when the conversation switched {}, switched when it continued {}, switched to the wrong template {}.</p>",
                pct(e.first_turn),
                pct(e.carried_from_first),
                pct(e.carried_later),
                pct(e.wrong_stay),
                pct(e.wrong_switch),
                pct(e.wrong_target)
            );
        }
    }
    if let Some(multi) = page.multi {
        out.push_str("<h2>Multi-part questions</h2>");
        let _ = write!(
            out,
            "<p>{} questions: the whole set of intents right on {}; a single question split in error on {}.</p><table><tr><th>intents asked</th><th>questions</th><th>set right</th><th>split</th></tr>",
            multi.questions,
            pct(multi.intent_set_accuracy),
            pct(multi.false_split_rate)
        );
        for (count, row) in &multi.intent_set_by_count {
            let _ = write!(
                out,
                "<tr><td>{}</td><td class=\"n\">{}</td>{}{}</tr>",
                escape(count),
                row.questions,
                pct_cell(row.accuracy),
                pct_cell(row.split_rate)
            );
        }
        out.push_str("</table>");
    }
    let _ = write!(
        out,
        "<p class=\"notes\">Written by switchyard {}.</p></body></html>",
        env!("CARGO_PKG_VERSION")
    );
    out
}

fn figures(out: &mut String, page: &Page) {
    let now = &page.now.report;
    out.push_str("<h2>Figures</h2><table><tr><th></th>");
    if page.before.is_some() {
        out.push_str("<th>before</th>");
    }
    out.push_str("<th>now</th></tr>");
    type Figure = fn(&crate::EvalReport) -> f64;
    let rows: [(&str, Figure); 7] = [
        ("intent accuracy (best template, no threshold)", |r| {
            r.intent_accuracy
        }),
        ("datasource accuracy", |r| r.datasource_accuracy),
        ("in-scope accuracy at the threshold", |r| {
            r.in_scope_accuracy
        }),
        ("out-of-scope recall", |r| r.oos_recall),
        ("out-of-scope precision", |r| r.oos_precision),
        ("clarify rate (in scope)", |r| r.clarify_rate),
        ("resolved (executed right, or clarified with it)", |r| {
            r.in_scope_resolved
        }),
    ];
    for (name, value) in rows {
        let _ = write!(out, "<tr><td>{}</td>", escape(name));
        if let Some(before) = page.before {
            out.push_str(&pct_cell(value(&before.report)));
            let delta = value(now) - value(&before.report);
            let class = if delta > 1e-9 {
                "up"
            } else if delta < -1e-9 {
                "down"
            } else {
                ""
            };
            let _ = write!(
                out,
                "<td class=\"n {class}\">{} ({:+.2})</td></tr>",
                pct(value(now)),
                delta * 100.0
            );
        } else {
            let _ = write!(out, "{}</tr>", pct_cell(value(now)));
        }
    }
    let _ = write!(
        out,
        "</table><p>{} questions ({} in scope, {} out of scope); threshold {:.3} ({}).</p>",
        now.queries,
        now.in_scope_queries,
        now.oos_queries,
        now.threshold,
        escape(&now.threshold_source)
    );
}

fn charts(out: &mut String, page: &Page) {
    let now = page.now;
    out.push_str("<h2>Confidence</h2><div class=\"charts\">");

    let mut plot = Plot::new("risk-coverage", (0.0, 1.0), (0.0, 1.0));
    plot.axes(
        "coverage (share of questions answered)",
        "risk (share answered wrongly)",
        5,
    );
    if let Some(before) = page.before {
        plot.line(&Series {
            name: "before".into(),
            points: risk_coverage(&before.answers, 200),
            class: "before",
        });
    }
    plot.line(&Series {
        name: "now".into(),
        points: risk_coverage(&now.answers, 200),
        class: "now",
    });
    let (coverage, risk) = at_threshold(&now.answers, now.report.threshold);
    plot.point(
        coverage,
        risk,
        &format!(
            "threshold {:.2}: {} answered, {} wrong",
            now.report.threshold,
            pct(coverage),
            pct(risk)
        ),
    );
    out.push_str(&plot.finish(
        "Risk–coverage: the questions answered most confident first; an out-of-scope question answered counts as wrong. The dot is the chosen threshold.",
    ));

    let rows = &now.report.thresholds;
    let (low, high) = rows.iter().fold((f64::MAX, f64::MIN), |(lo, hi), r| {
        (
            lo.min(f64::from(r.threshold)),
            hi.max(f64::from(r.threshold)),
        )
    });
    let threshold = f64::from(now.report.threshold);
    let (low, high) = (low.min(threshold - 0.05), high.max(threshold + 0.05));
    let mut plot = Plot::new("threshold", (low, high), (0.0, 1.0));
    plot.axes("threshold", "share", 5);
    plot.line(&Series {
        name: "in-scope accuracy".into(),
        points: rows
            .iter()
            .map(|r| (f64::from(r.threshold), r.in_scope_accuracy))
            .collect(),
        class: "now",
    });
    plot.line(&Series {
        name: "out-of-scope recall".into(),
        points: rows
            .iter()
            .map(|r| (f64::from(r.threshold), r.oos_recall))
            .collect(),
        class: "second",
    });
    plot.vline(threshold, &format!("chosen {threshold:.2}"));
    out.push_str(&plot.finish("The threshold's trade-off: in-scope questions answered right against out-of-scope questions declined."));

    let (bins, ece, measure) = reliability(&now.answers, 10);
    let mut plot = Plot::new("reliability", (0.0, 1.0), (0.0, 1.0));
    plot.axes(measure, "accuracy", 5);
    for bin in &bins {
        plot.bar(
            bin.from,
            bin.to,
            bin.accuracy,
            "now",
            &format!(
                "{:.1}–{:.1}: {} questions, accuracy {}, mean {measure} {:.2}",
                bin.from,
                bin.to,
                bin.questions,
                pct(bin.accuracy),
                bin.mean_confidence
            ),
        );
    }
    plot.line(&Series {
        name: "perfectly calibrated".into(),
        points: vec![(0.0, 0.0), (1.0, 1.0)],
        class: "ideal",
    });
    out.push_str(&plot.finish(&format!(
        "Reliability: accuracy of the best template by {measure} (10 bins, every question); expected calibration error {:.3}.",
        ece
    )));

    let rows = per_template(&now.answers);
    let mut histogram = [0usize; 10];
    for row in rows.values() {
        histogram[((row.accuracy() * 10.0) as usize).min(9)] += 1;
    }
    // A multiple of 5, so the five ticks fall on whole templates.
    let most = (histogram.iter().copied().max().unwrap_or(0).max(1)).div_ceil(5) * 5;
    let most = most as f64;
    let mut plot = Plot::new("template-accuracy", (0.0, 1.0), (0.0, most));
    plot.axes("accuracy of the template's questions", "templates", 5);
    for (i, count) in histogram.iter().enumerate() {
        let from = i as f64 / 10.0;
        plot.bar(
            from,
            from + 0.1,
            *count as f64,
            "now",
            &format!(
                "{count} templates at {:.0}–{:.0}%",
                from * 100.0,
                from * 100.0 + 10.0
            ),
        );
    }
    plot.legend("templates", "now");
    out.push_str(&plot.finish(&format!(
        "How many of the {} labelled templates reach each accuracy.",
        rows.len()
    )));
    out.push_str("</div>");
}

fn templates(out: &mut String, page: &Page) {
    let now = per_template(&page.now.answers);
    let before = page.before.map(|b| per_template(&b.answers));
    let mut rows: Vec<_> = now.values().collect();
    rows.sort_by(|a, b| {
        a.accuracy()
            .total_cmp(&b.accuracy())
            .then(a.template.cmp(&b.template))
    });
    out.push_str(
        "<h2>Templates, least accurate first</h2><table><tr><th>template</th><th>questions</th>",
    );
    if before.is_some() {
        out.push_str("<th>before</th>");
    }
    out.push_str("<th>accuracy</th><th>most often taken for</th></tr>");
    for row in rows {
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"n\">{}</td>",
            escape(&row.template),
            row.questions
        );
        if let Some(before) = &before {
            match before.get(&row.template) {
                Some(b) => out.push_str(&pct_cell(b.accuracy())),
                None => out.push_str("<td></td>"),
            }
        }
        let _ = write!(
            out,
            "<td class=\"n\"><span class=\"meter\" style=\"width:{:.0}px\"></span>{}</td><td>{}</td></tr>",
            row.accuracy() * 80.0,
            pct(row.accuracy()),
            row.mistaken_for
                .as_ref()
                .map(|(t, n)| format!("{} ({n})", escape(t)))
                .unwrap_or_default()
        );
    }
    out.push_str("</table>");
}

fn confused(out: &mut String, now: &Snapshot) {
    let pairs = confusions(&now.answers, 15);
    out.push_str("<h2>Most confused pairs</h2>");
    if pairs.is_empty() {
        out.push_str("<p>No in-scope question went to another template.</p>");
        return;
    }
    out.push_str("<table><tr><th>asked for</th><th>answered by</th><th>questions</th><th>for example</th></tr>");
    for pair in pairs {
        let examples: Vec<String> = pair
            .questions
            .iter()
            .take(3)
            .map(|q| format!("<div class=\"q\">“{}”</div>", escape(q)))
            .collect();
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&pair.expected),
            escape(&pair.predicted),
            pair.questions.len(),
            examples.concat()
        );
    }
    out.push_str("</table>");
}

fn pct(x: f64) -> String {
    format!("{:.2}%", x * 100.0)
}

fn pct_cell(x: f64) -> String {
    format!("<td class=\"n\">{}</td>", pct(x))
}
