//! The catalog check `index build` runs: each template's own examples, left out of its
//! centroid one at a time, scored against every template's centroid. An example nearer
//! another template's centroid than its own goes astray, and names the rival, so an author
//! sees confusable templates before users do. (The embedding score alone: the learned head,
//! when there is one, is trained on these examples and cannot be left out cheaply.)

use switchyard_vectors::embed::{dot, normalize};

use super::Index;

/// A template some of whose examples go astray when left out.
#[derive(Debug, Clone, PartialEq)]
pub struct Confusable {
    pub datasource: String,
    pub template_id: String,
    pub examples: usize,
    /// `datasource/template` the most of its astray examples go to.
    pub rival: String,
    pub astray: Vec<String>,
}

/// Every template with an astray example, the most astray first; and how many examples
/// were checked.
pub fn confusable(index: &Index) -> (Vec<Confusable>, usize) {
    let mut all: Vec<(String, &[f32])> = Vec::new();
    for partition in &index.partitions {
        let datasource = index.catalog.datasource(&partition.datasource);
        for t in 0..partition.template_count() {
            let id = datasource.map_or("?", |d| d.templates[t].id.as_str());
            all.push((
                format!("{}/{id}", partition.datasource),
                partition.centroid(t),
            ));
        }
    }
    let mut found = Vec::new();
    let mut checked = 0;
    for partition in &index.partitions {
        let Some(datasource) = index.catalog.datasource(&partition.datasource) else {
            continue;
        };
        for (t, template) in datasource.templates.iter().enumerate() {
            let own = format!("{}/{}", partition.datasource, template.id);
            let rows: Vec<&[f32]> = partition.template_rows(t).collect();
            let examples = template.nl_examples.len().min(rows.len());
            if rows.len() < 2 {
                continue;
            }
            let mut sum = vec![0.0f32; rows[0].len()];
            for row in &rows {
                sum.iter_mut().zip(*row).for_each(|(s, x)| *s += x);
            }
            let mut astray = Vec::new();
            let mut rivals: Vec<String> = Vec::new();
            for (e, text) in template.nl_examples.iter().enumerate().take(examples) {
                checked += 1;
                let mut without: Vec<f32> = sum.iter().zip(rows[e]).map(|(s, x)| s - x).collect();
                normalize(&mut without);
                let own_score = dot(rows[e], &without);
                let rival = all
                    .iter()
                    .filter(|(name, _)| *name != own)
                    .map(|(name, centroid)| (name, dot(rows[e], centroid)))
                    .max_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((name, _)) = rival.filter(|(_, s)| *s > own_score) {
                    astray.push(text.clone());
                    rivals.push(name.clone());
                }
            }
            if astray.is_empty() {
                continue;
            }
            rivals.sort();
            let rival = rivals
                .chunk_by(|a, b| a == b)
                .max_by_key(|run| run.len())
                .map(|run| run[0].clone())
                .unwrap_or_default();
            found.push(Confusable {
                datasource: partition.datasource.clone(),
                template_id: template.id.clone(),
                examples,
                rival,
                astray,
            });
        }
    }
    found.sort_by(|a, b| {
        b.astray
            .len()
            .cmp(&a.astray.len())
            .then_with(|| a.template_id.cmp(&b.template_id))
    });
    (found, checked)
}
