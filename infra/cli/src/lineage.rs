//! Which cached encoder a changed catalog can start from. Every adapted encoder in the
//! cache keeps the texts it was trained on (`texts.json`, per template) and the family it
//! belongs to (base weights, recipe, settings, negative examples: everything but the
//! templates' texts). A catalog whose encoder is not cached looks for one of its family
//! whose templates differ in few places, and trains it further on those only.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use switchyard_index::index::EncoderManifest;

pub const TEXTS_FILE: &str = "texts.json";

/// An incremental run stacks on the ones before it; past this many, the next change
/// trains from the base model again, so small drifts do not pile up without end.
const MAX_INCREMENTAL_RUNS: usize = 5;

/// What an adapted encoder was trained on, beside it in the cache.
#[derive(Debug, Serialize, Deserialize)]
pub struct TrainedTexts {
    /// sha256 of everything but the templates' texts that shaped the weights.
    pub family: String,
    /// Each template's training texts, by `datasource/id`.
    pub templates: BTreeMap<String, Vec<String>>,
}

impl TrainedTexts {
    pub fn new(family: &str, keys: &[String], groups: &[Vec<String>]) -> TrainedTexts {
        TrainedTexts {
            family: family.to_owned(),
            templates: keys.iter().cloned().zip(groups.iter().cloned()).collect(),
        }
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(TEXTS_FILE);
        std::fs::write(&path, serde_json::to_string(self)?)
            .with_context(|| format!("writing {}", path.display()))
    }
}

/// A cached encoder to train further, and what changed since it.
#[derive(Debug)]
pub struct Parent {
    pub dir: PathBuf,
    pub manifest: EncoderManifest,
    /// Positions (in the catalog's templates) of the templates added or changed.
    pub changed: Vec<usize>,
    pub changed_keys: Vec<String>,
    pub removed_keys: Vec<String>,
}

/// The cached encoder of `family` under `encoders` nearest to the catalog (`keys`,
/// `groups`): the fewest templates added, changed or removed, at most `max_share` of the
/// catalog's; ties go to the folder name, so every machine picks alike. `valid` says
/// whether a folder holds a usable encoder (its manifest and graph agree).
pub fn find_parent(
    encoders: &Path,
    family: &str,
    keys: &[String],
    groups: &[Vec<String>],
    max_share: f64,
    valid: impl Fn(&Path) -> Option<EncoderManifest>,
) -> Option<Parent> {
    let limit = (max_share * keys.len() as f64).floor() as usize;
    if limit == 0 {
        return None;
    }
    let mut folders: Vec<PathBuf> = std::fs::read_dir(encoders)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join(TEXTS_FILE).is_file())
        .collect();
    folders.sort();
    let mut best: Option<Parent> = None;
    for dir in folders {
        let Some(trained) = std::fs::read_to_string(dir.join(TEXTS_FILE))
            .ok()
            .and_then(|t| serde_json::from_str::<TrainedTexts>(&t).ok())
        else {
            continue;
        };
        if trained.family != family {
            continue;
        }
        let changed: Vec<usize> = (0..keys.len())
            .filter(|&i| trained.templates.get(&keys[i]) != Some(&groups[i]))
            .collect();
        let removed_keys: Vec<String> = trained
            .templates
            .keys()
            .filter(|k| !keys.contains(k))
            .cloned()
            .collect();
        let distance = changed.len() + removed_keys.len();
        if distance == 0 || distance > limit {
            continue;
        }
        if best
            .as_ref()
            .is_some_and(|b| b.changed.len() + b.removed_keys.len() <= distance)
        {
            continue;
        }
        let Some(manifest) = valid(&dir) else {
            continue;
        };
        if manifest.incremental.len() >= MAX_INCREMENTAL_RUNS {
            continue;
        }
        best = Some(Parent {
            changed_keys: changed.iter().map(|&i| keys[i].clone()).collect(),
            changed,
            removed_keys,
            dir,
            manifest,
        });
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> EncoderManifest {
        serde_json::from_value(serde_json::json!({
            "base_model": "m", "model_id": "m+adapted@x", "onnx_sha256": "x",
            "weights_sha256": "w", "loss": "l", "seed": 1, "steps": 1, "pairs": 1,
            "epochs": 1, "learning_rate": 0.1, "first_trained_layer": 0, "held_out": 0,
            "training_seconds": 1.0
        }))
        .unwrap()
    }

    fn keys(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("d/t{i}")).collect()
    }

    fn groups(n: usize) -> Vec<Vec<String>> {
        (0..n)
            .map(|i| vec![format!("a{i}"), format!("b{i}")])
            .collect()
    }

    #[test]
    fn the_nearest_encoder_of_the_family_within_the_share_is_the_parent() {
        let root = std::env::temp_dir().join(format!("switchyard-lineage-{}", std::process::id()));
        let write = |name: &str, family: &str, groups: &[Vec<String>]| {
            let dir = root.join(name);
            std::fs::create_dir_all(&dir).unwrap();
            TrainedTexts::new(family, &keys(10), groups)
                .write(&dir)
                .unwrap();
        };
        // Cached: "a" differs from the catalog in template 3, "b" in 3 and 5, "c" is of
        // another family.
        let mut one = groups(10);
        one[3].push("c3".into());
        write("a", "fam", &one);
        let mut two = one.clone();
        two[5].push("c5".into());
        write("b", "fam", &two);
        write("c", "other", &groups(10));
        let valid = |_: &Path| Some(manifest());

        let found = find_parent(&root, "fam", &keys(10), &groups(10), 0.2, valid).unwrap();
        assert_eq!(found.dir, root.join("a"));
        assert_eq!(
            (found.changed, found.changed_keys),
            (vec![3], vec!["d/t3".to_owned()])
        );
        // Past the share, nothing is a parent.
        assert!(find_parent(&root, "fam", &keys(10), &groups(10), 0.05, valid).is_none());
        // A template removed counts as a change.
        let found = find_parent(&root, "fam", &keys(9), &groups(9), 0.3, valid).unwrap();
        assert_eq!(found.removed_keys, vec!["d/t9".to_owned()]);
        // An encoder whose graph is gone is no parent.
        assert!(find_parent(&root, "fam", &keys(10), &groups(10), 0.2, |_| None).is_none());
        std::fs::remove_dir_all(&root).ok();
    }
}
