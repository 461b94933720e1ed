//! Research driver: adapt the model folder BASE to the groups of GROUPS_JSON (a list of
//! lists of texts, one per template) and write the adapted folder OUT, with OUT/reference.json
//! holding the adapted f32 embeddings of REFERENCE_JSON's texts (build_onnx_model.py's
//! --reference). Settings come as JSON in ADAPT_SETTINGS (defaults otherwise).
use std::path::Path;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, groups, base, out, reference] = args.as_slice() else {
        eprintln!("usage: adapt_groups GROUPS_JSON BASE OUT REFERENCE_JSON");
        std::process::exit(2);
    };
    let settings: switchyard_adapt::Settings = std::env::var("ADAPT_SETTINGS")
        .map(|s| serde_json::from_str(&s).expect("ADAPT_SETTINGS"))
        .unwrap_or_default();
    let groups: Vec<Vec<String>> =
        serde_json::from_str(&std::fs::read_to_string(groups).unwrap()).unwrap();
    let encoder = switchyard_adapt::Encoder::load(Path::new(base), &settings).unwrap();
    let run = encoder
        .adapt(&groups, &settings, &|step, steps, loss| {
            if step % 10 == 0 || step == steps {
                eprintln!("step {step}/{steps} loss {loss:.4}");
            }
        })
        .unwrap();
    eprintln!("{run:?}");
    let sha = encoder.save(Path::new(out)).unwrap();
    eprintln!("weights sha256 {sha}");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(reference).unwrap()).unwrap();
    let texts: Vec<&str> = reference["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["text"].as_str().unwrap())
        .collect();
    let vectors = encoder.embed(&texts).unwrap();
    let items: Vec<serde_json::Value> = texts
        .iter()
        .zip(vectors)
        .map(|(t, v)| serde_json::json!({"text": t, "embedding": v}))
        .collect();
    std::fs::write(
        Path::new(out).join("reference.json"),
        serde_json::json!({"items": items}).to_string(),
    )
    .unwrap();
}
