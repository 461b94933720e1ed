//! Building an index: embed every template text of a catalog, build one partition per
//! datasource, write the manifest, train the learned head and calibrate the threshold.

use super::drift::embed_probes;
use super::{
    is_held_out, template_texts, DatasourceVectors, EncoderManifest, HeadSummary, Index, Manifest,
    ManifestDatasource, Partition, Progress, FORMAT_VERSION,
};
use crate::config::RouterConfig;
use crate::head::{Head, TrainingSet};
use switchyard_catalog::template::Catalog;
use switchyard_vectors::embed::Embedder;
use switchyard_vectors::error::Result;
use switchyard_vectors::frame::build_time;

impl Index {
    /// Embed every template text of `catalog` and build the partitions.
    pub fn build(
        catalog: Catalog,
        embedder: &dyn Embedder,
        config: &RouterConfig,
        progress: Progress<'_>,
    ) -> Result<Index> {
        Self::build_with_encoder(catalog, embedder, None, config, progress)
    }

    /// [`Index::build`] with `embedder` an adapted encoder, described by `encoder` (or
    /// the base model, `None`). With an adapted encoder the threshold is calibrated on the
    /// `nl_examples` its training left out ([`held_out`]), as the head's temperature is.
    pub fn build_with_encoder(
        catalog: Catalog,
        embedder: &dyn Embedder,
        encoder: Option<EncoderManifest>,
        config: &RouterConfig,
        progress: Progress<'_>,
    ) -> Result<Index> {
        let total: usize = catalog
            .datasources
            .iter()
            .map(|d| {
                d.spec.negative_examples.len()
                    + d.templates
                        .iter()
                        .map(|t| template_texts(t).len())
                        .sum::<usize>()
            })
            .sum();
        let mut done = 0;
        let mut vectors = Vec::with_capacity(catalog.datasources.len());
        for datasource in &catalog.datasources {
            let mut source = DatasourceVectors::default();
            for template in &datasource.templates {
                let texts = template_texts(template);
                let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
                source.templates.push(embedder.embed(&texts)?);
                done += texts.len();
                progress(done, total);
            }
            let negatives: Vec<&str> = datasource
                .spec
                .negative_examples
                .iter()
                .map(String::as_str)
                .collect();
            if !negatives.is_empty() {
                source.negatives = embedder.embed(&negatives)?;
                done += negatives.len();
                progress(done, total);
            }
            vectors.push(source);
        }
        let mut index = Index::from_vectors_with_encoder(
            catalog,
            vectors,
            embedder.model_id(),
            embedder.dimension(),
            encoder,
            config,
        );
        index.manifest.probes = embed_probes(embedder)?;
        Ok(index)
    }

    /// Build from vectors already computed, one [`DatasourceVectors`] per datasource.
    /// Used by [`Index::build`] and by benchmarks on synthetic data.
    pub fn from_vectors(
        catalog: Catalog,
        vectors: Vec<DatasourceVectors>,
        model_id: &str,
        dimension: usize,
        full_config: &RouterConfig,
    ) -> Index {
        Self::from_vectors_with_encoder(catalog, vectors, model_id, dimension, None, full_config)
    }

    fn from_vectors_with_encoder(
        catalog: Catalog,
        vectors: Vec<DatasourceVectors>,
        model_id: &str,
        dimension: usize,
        encoder: Option<EncoderManifest>,
        full_config: &RouterConfig,
    ) -> Index {
        let config = &full_config.index;
        let partitions: Vec<Partition> = catalog
            .datasources
            .iter()
            .zip(&vectors)
            .map(|(datasource, source)| {
                Partition::build(datasource.name(), dimension, source, config)
            })
            .collect();
        let manifest = Manifest {
            format_version: FORMAT_VERSION,
            model_id: model_id.to_owned(),
            dimension,
            templates_hash: catalog.content_hash(),
            built_at: build_time(),
            datasources: catalog
                .datasources
                .iter()
                .zip(&partitions)
                .map(|(d, p)| ManifestDatasource {
                    name: d.spec.name.clone(),
                    kind: d.spec.kind,
                    templates: p.template_count(),
                    vectors: p.vector_count(),
                    search: if p.uses_graph() { "hnsw" } else { "exact" }.to_owned(),
                })
                .collect(),
            build: config.clone(),
            head: None,
            calibration: None,
            probes: Vec::new(),
            encoder,
        };
        let mut index = Index {
            manifest,
            catalog,
            partitions,
            head: None,
            head_training_ms: None,
        };
        let templates = index.catalog.template_count();
        let head_settings = &config.learned_head;
        if head_settings.enabled && (2..=head_settings.max_templates).contains(&templates) {
            let began = std::time::Instant::now();
            let head = index.train_head(head_settings);
            index.head_training_ms = Some(began.elapsed().as_secs_f64() * 1000.0);
            index.manifest.head = Some(HeadSummary {
                templates,
                rows: index.partitions.iter().map(Partition::vector_count).sum(),
                epochs: head_settings.epochs,
                temperature: head.temperature,
            });
            index.head = Some(head);
        }
        index.manifest.calibration = index.calibrate(&full_config.composite_retrieval);
        index
    }

    /// Train the head on every template text; the temperature is fitted on every fifth
    /// `nl_example` of templates with at least three, held out of a first training.
    fn train_head(&self, settings: &crate::config::LearnedHeadConfig) -> Head {
        let dimension = self.manifest.dimension;
        let mut rows = Vec::new();
        let mut labels = Vec::new();
        let mut row_weights = Vec::new();
        let mut held_out = Vec::new();
        let mut centroids = Vec::new();
        let mut number = 0u32;
        // For `balance_templates`: each template's rows weigh the mean count over its own,
        // so its example count stops being a prior.
        let texts: usize = self.partitions.iter().map(Partition::vector_count).sum();
        let templates: usize = self.partitions.iter().map(Partition::template_count).sum();
        let mean_texts = texts as f32 / templates.max(1) as f32;
        for (datasource, partition) in self.catalog.datasources.iter().zip(&self.partitions) {
            for (t, template) in datasource.templates.iter().enumerate() {
                let examples = template.nl_examples.len();
                let balance = if settings.balance_templates {
                    mean_texts / partition.template_rows(t).count().max(1) as f32
                } else {
                    1.0
                };
                for (r, row) in partition.template_rows(t).enumerate() {
                    rows.extend_from_slice(row);
                    labels.push(number);
                    row_weights.push(
                        balance
                            * if r == examples {
                                settings.description_weight
                            } else {
                                1.0
                            },
                    );
                    held_out.push(r < examples && is_held_out(r, examples));
                }
                centroids.extend_from_slice(partition.centroid(t));
                number += 1;
            }
        }
        let keep = |flag: bool| -> (Vec<f32>, Vec<u32>, Vec<f32>) {
            let mut kept = (Vec::new(), Vec::new(), Vec::new());
            for (i, &out) in held_out.iter().enumerate() {
                if out == flag {
                    kept.0
                        .extend_from_slice(&rows[i * dimension..(i + 1) * dimension]);
                    kept.1.push(labels[i]);
                    kept.2.push(row_weights[i]);
                }
            }
            kept
        };
        let (train_rows, train_labels, train_weights) = keep(false);
        let (probe_rows, probe_labels, _) = keep(true);
        let full = TrainingSet {
            dimension,
            rows: &rows,
            labels: &labels,
            row_weights: &row_weights,
            centroids: &centroids,
        };
        let without = TrainingSet {
            dimension,
            rows: &train_rows,
            labels: &train_labels,
            row_weights: &train_weights,
            centroids: &centroids,
        };
        Head::train(
            &full,
            Some((&without, &probe_rows, &probe_labels)),
            settings,
        )
    }
}
