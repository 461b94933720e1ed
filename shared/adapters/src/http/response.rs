//! What a response becomes: the body as JSON (or text), a GraphQL answer's `data` or
//! `errors`, and `response_mapping` (`items_path` and `fields`).

use serde_json::Value;

/// The body as JSON. A cut body that is not complete JSON is an error; an uncut non-JSON
/// body is returned as text (GraphQL answers must be JSON).
pub(super) fn parse_body(
    body: &[u8],
    cut: bool,
    graphql: bool,
    cap: usize,
) -> std::result::Result<Value, String> {
    let exceeded = || {
        format!("the response exceeded {cap} bytes (connection.max_response_bytes) and what arrived is not complete JSON")
    };
    if body.iter().all(u8::is_ascii_whitespace) {
        return match (cut, graphql) {
            (true, _) => Err(exceeded()),
            (false, true) => Err("the GraphQL response is empty".into()),
            (false, false) => Ok(Value::Null),
        };
    }
    match serde_json::from_slice(body) {
        Ok(value) => Ok(value),
        Err(_) if cut => Err(exceeded()),
        Err(e) if graphql => Err(format!("the GraphQL response is not JSON: {e}")),
        Err(_) => Ok(Value::String(String::from_utf8_lossy(body).into_owned())),
    }
}

/// The messages of a GraphQL response's non-empty `errors`, joined.
pub(super) fn graphql_errors(response: &Value) -> Option<String> {
    let errors = response.get("errors")?.as_array()?;
    if errors.is_empty() {
        return None;
    }
    Some(
        errors
            .iter()
            .map(|error| match error.get("message").and_then(Value::as_str) {
                Some(message) => message.to_owned(),
                None => error.to_string(),
            })
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// A GraphQL response's `data`, or its `errors` as the failure.
pub(super) fn graphql_data(response: Value) -> std::result::Result<Value, String> {
    if let Some(errors) = graphql_errors(&response) {
        return Err(format!("GraphQL errors: {errors}"));
    }
    match response {
        Value::Object(mut map) => match map.remove("data") {
            Some(Value::Null) | None => Err("the GraphQL response has no data".into()),
            Some(data) => Ok(data),
        },
        _ => Err("the GraphQL response is not an object".into()),
    }
}

/// `response_mapping`: `items_path` (a dot path to what is returned) and `fields` (a list of
/// dot paths, or an object of output name → dot path) picked from each item.
#[derive(Debug)]
pub(super) struct Mapping {
    items_path: Option<String>,
    fields: Vec<(String, String)>,
}

impl Mapping {
    pub(super) fn parse(value: &Value) -> std::result::Result<Mapping, String> {
        let object = value
            .as_object()
            .ok_or_else(|| "response_mapping must be an object".to_owned())?;
        let mut mapping = Mapping {
            items_path: None,
            fields: Vec::new(),
        };
        for (key, item) in object {
            match key.as_str() {
                "items_path" => {
                    let path = item.as_str().ok_or_else(|| {
                        "response_mapping.items_path must be a dot path".to_owned()
                    })?;
                    mapping.items_path = Some(path.to_owned());
                }
                "fields" => {
                    let bad = || {
                        "response_mapping.fields must be a list of paths or an object of name: path"
                            .to_owned()
                    };
                    mapping.fields = match item {
                        Value::Array(paths) => paths
                            .iter()
                            .map(|p| p.as_str().map(|p| (p.to_owned(), p.to_owned())))
                            .collect::<Option<_>>()
                            .ok_or_else(bad)?,
                        Value::Object(named) => named
                            .iter()
                            .map(|(name, p)| p.as_str().map(|p| (name.clone(), p.to_owned())))
                            .collect::<Option<_>>()
                            .ok_or_else(bad)?,
                        _ => return Err(bad()),
                    };
                    if mapping.fields.is_empty() {
                        return Err("response_mapping.fields must name at least one field".into());
                    }
                }
                other => {
                    return Err(format!(
                        "response_mapping.{other} is unknown (use items_path and fields)"
                    ))
                }
            }
        }
        Ok(mapping)
    }

    pub(super) fn apply(&self, data: Value) -> std::result::Result<Value, String> {
        let picked = match &self.items_path {
            Some(path) => lookup(&data, path).cloned().ok_or_else(|| {
                format!("response_mapping.items_path `{path}` is not in the response")
            })?,
            None => data,
        };
        if self.fields.is_empty() {
            return Ok(picked);
        }
        Ok(match &picked {
            Value::Array(items) => Value::Array(items.iter().map(|i| self.project(i)).collect()),
            item => self.project(item),
        })
    }

    fn project(&self, item: &Value) -> Value {
        Value::Object(
            self.fields
                .iter()
                .map(|(name, path)| {
                    (
                        name.clone(),
                        lookup(item, path).cloned().unwrap_or(Value::Null),
                    )
                })
                .collect(),
        )
    }
}

/// The value at a dot path (`data.items`, `rows.0.name`); an empty path is the value itself.
pub(super) fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return Some(value);
    }
    path.split('.')
        .try_fold(value, |current, segment| match current {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => items.get(segment.parse::<usize>().ok()?),
            _ => None,
        })
}
