//! Choosing a split: the spans tried, and the finest valid split.

use std::collections::HashMap;

use crate::helpers::config;
use switchyard_core::orchestration::*;
use switchyard_routing::session::TemplateRef;

#[test]
fn spans_cover_every_split_into_at_most_max_parts() {
    assert_eq!(spans(2, 3), vec![(0, 1), (1, 2)]);
    assert_eq!(spans(3, 2), vec![(0, 1), (0, 2), (1, 3), (2, 3)]);
    assert_eq!(spans(3, 3).len(), 5);
    assert!(spans(1, 3).is_empty());
}

fn routed(template: &str, confidence: f32) -> SpanRouting {
    SpanRouting {
        template: Some(TemplateRef {
            datasource: "d".into(),
            template_id: template.into(),
        }),
        confidence,
        probability: Some(0.2),
        selected: confidence >= 0.4,
    }
}

#[test]
fn the_finest_valid_split_wins_and_invalid_ones_never_do() {
    let config = config();
    let whole = routed("a", 0.6);
    let mut map: HashMap<Span, SpanRouting> = HashMap::new();
    map.insert((0, 1), routed("a", 0.7));
    map.insert((1, 2), routed("b", 0.6));
    map.insert((1, 3), routed("b", 0.7));
    map.insert((2, 3), routed("c", 0.5));
    map.insert((0, 2), routed("a", 0.55));
    let split = choose(3, &whole, &map, &config).expect("a split");
    assert_eq!(split.parts, vec![(0, 1), (1, 2), (2, 3)]);

    // Neighbours on one template: not two requests.
    map.insert((2, 3), routed("b", 0.7));
    let split = choose(3, &whole, &map, &config).expect("a split");
    assert_eq!(split.parts, vec![(0, 1), (1, 3)]);

    // A part far less sure than the whole is a detail of it.
    let mut map: HashMap<Span, SpanRouting> = HashMap::new();
    map.insert((0, 1), routed("a", 0.7));
    map.insert((1, 2), routed("b", 0.45));
    assert_eq!(choose(2, &routed("a", 0.7), &map, &config), None);
    // ... unless the head is sure it is a request of its own.
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.995);
    assert!(choose(2, &routed("a", 0.7), &map, &config).is_some());
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.97);
    assert_eq!(choose(2, &routed("a", 0.7), &map, &config), None);
    // A part below the threshold, and not sure by the head either, is no request.
    map.insert((1, 2), routed("b", 0.3));
    assert_eq!(choose(2, &routed("a", 0.35), &map, &config), None);
    // ... unless the head is sure of it.
    map.get_mut(&(1, 2)).unwrap().probability = Some(0.97);
    assert!(choose(2, &routed("a", 0.35), &map, &config).is_some());
}
