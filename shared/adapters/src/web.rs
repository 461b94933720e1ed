//! `web` datasources: pages fetched on demand and searched for the question.
//!
//! A template names a page with its `endpoint_template` (GET; placeholders fill the path,
//! `query_params` the query). The page is fetched as the HTTP adapter makes any request:
//! only to the `base_url` origin and `allowed_hosts` (scheme, host and port; a bare entry
//! is https), checked again on every redirect, with its retries, size cap
//! (`connection.max_response_bytes`) and deadline. Its main text is
//! taken by dom_smoothie (a port of Mozilla's Readability: navigation, scripts, footers and
//! other boilerplate dropped) as Markdown, cut into chunks as a document is (headings, then
//! windows of words) and ranked by BM25 for the question. The answer gives the best
//! passages with the page's URL and title.
//!
//! Reading a page (parsing, Readability, chunking) runs on a thread of its own, with a
//! large stack (a page's nesting depth is the page author's) and within what is left of
//! the deadline: a page that takes too long fails the call, not the process.
//!
//! Connection settings beside the HTTP adapter's: `cache_ttl_seconds` (default 300; 0 does
//! not cache), how long a fetched page is reused by this process, and `passages` (default
//! 3), how many passages an answer gives.

use std::sync::Arc;
use std::time::Duration;

use regex::Regex;
use serde_json::{json, Map, Value};
use switchyard_catalog::clock::unix_now;
use switchyard_catalog::expiring::ExpiringMap;
use switchyard_catalog::template::{Datasource, Template};
use switchyard_catalog::BoxFuture;
use switchyard_contract::adapter::AdapterRequest;
use switchyard_documents::chunk::{chunk_document, terms, Chunk};
use switchyard_documents::config::DocumentsConfig;
use switchyard_documents::Document;
use switchyard_text::keywords::TermIndex;

use crate::adapter::{Adapter, Answer};
use crate::error::{AdapterError, Result};
use crate::http::{FetchedPage, HttpDatasource};

const DEFAULT_CACHE_TTL_SECONDS: i64 = 300;
const DEFAULT_PASSAGES: usize = 3;
/// Pages kept per process: the cache never grows with the number of distinct URLs.
const CACHED_PAGES: usize = 64;
/// Characters of a passage shown in the answer's text (the data has it whole).
const PREVIEW_CHARS: usize = 400;
/// The stack of the thread that reads a page: address space reserved, touched only by a
/// deeply nested page (the process's threads have 2 MiB).
const READER_STACK_BYTES: usize = 256 << 20;

pub struct WebDatasource {
    name: String,
    http: HttpDatasource,
    pages: ExpiringMap<Arc<Page>>,
    ttl_seconds: i64,
    passages: usize,
    chunking: DocumentsConfig,
}

/// A fetched page as it is searched.
struct Page {
    url: String,
    title: String,
    chunks: Vec<Chunk>,
    terms: TermIndex,
    truncated: bool,
    fetched_at: i64,
}

impl WebDatasource {
    /// The checks an index build runs: the HTTP adapter's on every template (hosts,
    /// placeholders, headers), GET only, and the web settings.
    pub fn check(datasource: &Datasource) -> Result<()> {
        HttpDatasource::check(datasource)?;
        Settings::read(datasource)?;
        Ok(())
    }

    pub fn open(datasource: &Datasource) -> Result<WebDatasource> {
        let settings = Settings::read(datasource)?;
        Ok(WebDatasource {
            name: datasource.name().to_owned(),
            http: HttpDatasource::open(datasource)?,
            pages: ExpiringMap::new(CACHED_PAGES),
            ttl_seconds: settings.ttl_seconds,
            passages: settings.passages,
            // Pages are cut and scored with the documents section's embedded defaults: the
            // factory opening an adapter has no deployment configuration to read.
            chunking: DocumentsConfig::default(),
        })
    }

    /// The page `template` names with `parameters`: from the cache while fresh, else
    /// fetched and read. Gives whether it came from the cache.
    async fn page(
        &self,
        template: &Template,
        parameters: &Map<String, Value>,
        deadline: Duration,
    ) -> Result<(Arc<Page>, bool)> {
        let key = self.http.page_url(template, parameters)?;
        let now = unix_now();
        if self.ttl_seconds > 0 {
            if let Some(page) = self.pages.get(key.as_str(), now) {
                return Ok((page, true));
            }
        }
        let started = tokio::time::Instant::now();
        let fetched = self.http.fetch_page(template, parameters, deadline).await?;
        let page = Arc::new(
            self.read_within(template, fetched, now, started + deadline)
                .await?,
        );
        if self.ttl_seconds > 0 {
            self.pages
                .put(key.as_str(), Arc::clone(&page), now + self.ttl_seconds);
        }
        Ok((page, false))
    }

    /// [`read`] on a thread of its own, by `end`.
    async fn read_within(
        &self,
        template: &Template,
        fetched: FetchedPage,
        now: i64,
        end: tokio::time::Instant,
    ) -> Result<Page> {
        let url = fetched.url.to_string();
        let fail = |message: String| AdapterError::Datasource {
            datasource: self.name.clone(),
            message: format!("template `{}`: the page at {url}: {message}", template.id),
        };
        let chunking = self.chunking.clone();
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("web-page-reader".into())
            .stack_size(READER_STACK_BYTES)
            .spawn(move || {
                // The receiver may be gone (the deadline passed): nothing to tell then.
                let _ = sender.send(read(fetched, now, &chunking));
            })
            .map_err(|e| fail(format!("no thread to read it: {e}")))?;
        match tokio::time::timeout_at(end, receiver).await {
            Ok(Ok(page)) => page.map_err(fail),
            Ok(Err(_)) => Err(fail("reading it failed".into())),
            Err(_) => Err(fail("not read within the deadline".into())),
        }
    }
}

/// A fetched page's main text, chunked and indexed for BM25; the error says why there is
/// none.
fn read(
    fetched: FetchedPage,
    now: i64,
    chunking: &DocumentsConfig,
) -> std::result::Result<Page, String> {
    let url = fetched.url.to_string();
    let html = String::from_utf8_lossy(&fetched.body);
    let (title, text) = main_text(&html, &url)?;
    let document = Document {
        id: url.clone(),
        title: title.clone(),
        text,
        summary: None,
        questions: Vec::new(),
        metadata: Default::default(),
    };
    let chunks = chunk_document(&document, 0, chunking.chunk_words, chunking.overlap_words);
    let terms = TermIndex::new(
        chunks.iter().map(|c| {
            terms(&format!(
                "{title} {} {}",
                c.heading.as_deref().unwrap_or(""),
                c.text
            ))
        }),
        chunking.k1,
        chunking.b,
    );
    Ok(Page {
        url,
        title,
        chunks,
        terms,
        truncated: fetched.truncated,
        fetched_at: now,
    })
}

/// The web settings of `connection`, each checked.
struct Settings {
    ttl_seconds: i64,
    passages: usize,
}

impl Settings {
    fn read(datasource: &Datasource) -> Result<Settings> {
        let fail = |message: String| AdapterError::Datasource {
            datasource: datasource.name().to_owned(),
            message,
        };
        let number = |field: &str, default: i64, least: i64| -> Result<i64> {
            match datasource.spec.connection.get(field) {
                None => Ok(default),
                Some(text) => text
                    .trim()
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= least)
                    .ok_or_else(|| {
                        fail(format!(
                            "connection.{field} must be a whole number of at least {least}, found `{text}`"
                        ))
                    }),
            }
        };
        for template in &datasource.templates {
            let method = template.http_method.as_deref().unwrap_or("GET").trim();
            if !method.eq_ignore_ascii_case("GET") {
                return Err(fail(format!(
                    "template `{}`: http_method: a web page is fetched with GET, found `{method}`",
                    template.id
                )));
            }
            if template.body.is_some() {
                return Err(fail(format!(
                    "template `{}`: body: a web page is fetched with GET, which sends none",
                    template.id
                )));
            }
        }
        Ok(Settings {
            ttl_seconds: number("cache_ttl_seconds", DEFAULT_CACHE_TTL_SECONDS, 0)?,
            passages: number("passages", DEFAULT_PASSAGES as i64, 1)? as usize,
        })
    }
}

/// Deepest nesting of elements a page may have: far past real pages (tens), short of what
/// makes parsing slow (the tree builder scans its stack of open elements per tag: a
/// megabyte of nested `<div>` takes minutes) or deep (the readers recurse).
const MAX_NESTING: usize = 1_000;

/// How deep `html`'s elements nest, counted from its tags: every element but the void
/// ones and those whose end tag may be left out (a `<p>` ends at the next). Comments and
/// raw text (scripts, styles) hold no tags.
fn nesting_depth(html: &str) -> usize {
    const UNCOUNTED: &[&str] = &[
        "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
        "source", "track", "wbr", "p", "li", "dt", "dd", "tr", "td", "th", "tbody", "thead",
        "tfoot", "option", "optgroup", "colgroup", "caption", "rb", "rt", "rtc", "rp", "html",
        "head", "body",
    ];
    let lower = html.to_ascii_lowercase();
    let (mut depth, mut deepest, mut at) = (0usize, 0usize, 0usize);
    while let Some(found) = lower[at..].find('<') {
        let start = at + found;
        let rest = &lower[start + 1..];
        if rest.starts_with("!--") {
            at = rest
                .find("-->")
                .map_or(lower.len(), |end| start + 1 + end + 3);
            continue;
        }
        let closing = rest.starts_with('/');
        let name: String = rest[usize::from(closing)..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        let end = rest.find('>').map_or(lower.len(), |e| start + 1 + e + 1);
        at = end.max(start + 1);
        if name.is_empty() || UNCOUNTED.contains(&name.as_str()) {
            continue;
        }
        if closing {
            depth = depth.saturating_sub(1);
        } else if !lower[start..end].ends_with("/>") {
            depth += 1;
            deepest = deepest.max(depth);
            if matches!(name.as_str(), "script" | "style" | "textarea" | "title") {
                // Raw text up to its end tag.
                let close = format!("</{name}");
                at = lower[at..].find(&close).map_or(lower.len(), |e| at + e);
            }
        }
    }
    deepest
}

/// The page's title and main text as Markdown (headings kept, link targets dropped), by
/// Readability's rules.
fn main_text(html: &str, url: &str) -> std::result::Result<(String, String), String> {
    let depth = nesting_depth(html);
    if depth > MAX_NESTING {
        return Err(format!(
            "its elements nest {depth} deep, past the {MAX_NESTING} a page is read to"
        ));
    }
    let config = dom_smoothie::Config {
        text_mode: dom_smoothie::TextMode::Markdown,
        ..Default::default()
    };
    let mut readability = dom_smoothie::Readability::new(html, Some(url), Some(config))
        .map_err(|e| format!("not a readable page: {e}"))?;
    let article = readability
        .parse()
        .map_err(|e| format!("no main text found: {e}"))?;
    let text = plain_markdown(&article.text_content);
    if text.trim().is_empty() {
        return Err("no main text found".into());
    }
    Ok((article.title.trim().to_owned(), text))
}

/// Markdown as text to search and show: `[words](target)` → `words`, `![alt](src)` →
/// `alt` (the targets are not the page's text), and `\.` → `.` (the converter escapes
/// every character Markdown could read as syntax).
fn plain_markdown(markdown: &str) -> String {
    static LINK: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    static ESCAPE: std::sync::OnceLock<Regex> = std::sync::OnceLock::new();
    let link = LINK.get_or_init(|| {
        Regex::new(r"!?\[([^\]]*)\]\((?:[^()]|\([^()]*\))*\)").expect("a valid regex")
    });
    let escape =
        ESCAPE.get_or_init(|| Regex::new(r"\\([\\`*_{}\[\]()#+\-.!|~<>])").expect("a valid regex"));
    let text = link.replace_all(markdown, "$1");
    escape.replace_all(&text, "$1").into_owned()
}

impl Adapter for WebDatasource {
    fn execute<'a>(
        &'a self,
        template: &'a Template,
        parameters: &'a Map<String, Value>,
        request: &'a AdapterRequest,
        deadline: Duration,
    ) -> BoxFuture<'a, Result<Answer>> {
        Box::pin(async move {
            let (page, cached) = self.page(template, parameters, deadline).await?;
            Ok(answer(&page, &request.query, self.passages, cached))
        })
    }
}

/// The page's best passages for `question` (BM25; the opening passage when no word of the
/// question is on the page, said by `matched: false`).
fn answer(page: &Page, question: &str, passages: usize, cached: bool) -> Answer {
    let scores = page.terms.scores(&terms(question));
    let mut ranked: Vec<usize> = (0..page.chunks.len())
        .filter(|&i| scores[i] > 0.0)
        .collect();
    ranked.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    ranked.truncate(passages);
    let matched = !ranked.is_empty();
    if !matched && !page.chunks.is_empty() {
        ranked.push(0);
    }
    let found: Vec<Value> = ranked
        .iter()
        .map(|&i| {
            json!({
                "heading": page.chunks[i].heading,
                "text": page.chunks[i].text,
                "score": switchyard_catalog::json::decimal(scores[i]),
            })
        })
        .collect();
    let mut content = if matched {
        format!("From \"{}\" ({}):", page.title, page.url)
    } else {
        format!(
            "\"{}\" ({}) has no passage with the question's words; it opens with:",
            page.title, page.url
        )
    };
    for (n, &i) in ranked.iter().enumerate() {
        let chunk = &page.chunks[i];
        let mut preview: String = chunk.text.chars().take(PREVIEW_CHARS).collect();
        if preview.len() < chunk.text.len() {
            preview.push('…');
        }
        match &chunk.heading {
            Some(heading) => content.push_str(&format!("\n{}. {heading}: {preview}", n + 1)),
            None => content.push_str(&format!("\n{}. {preview}", n + 1)),
        }
    }
    let data = json!({
        "url": page.url,
        "title": page.title,
        "matched": matched,
        "passages": found,
        "cached": cached,
        "fetched_at": page.fetched_at,
        "truncated": page.truncated,
    });
    (content, data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nesting_is_counted_from_the_tags_that_nest() {
        let page = "<html><body><div><p>one<p>two<ul><li>a<li>b</ul><img src=x><br/>\
                    <!-- <div><div> --><script>if (a<b) '<div>'</script><x-a><x-a></x-a></x-a></div>";
        // div > ul, and div > x-a > x-a; the script is one level, its text none.
        assert_eq!(nesting_depth(page), 3);
        let deep = format!("{}text{}", "<div>".repeat(5_000), "</div>".repeat(5_000));
        assert_eq!(nesting_depth(&deep), 5_000);
        let error = main_text(&deep, "http://example.com/").unwrap_err();
        assert!(error.contains("nest 5000 deep"), "{error}");
    }

    #[test]
    fn link_targets_and_escapes_are_dropped_and_the_words_kept() {
        assert_eq!(
            plain_markdown("See [the guide](https://x.test/a_(b)) and ![a chart](c.png)."),
            "See the guide and a chart."
        );
        assert_eq!(
            plain_markdown(r"Rust 1\.76\.0 reads CARGO\_MAKEFLAGS \(and \[more\]\)"),
            "Rust 1.76.0 reads CARGO_MAKEFLAGS (and [more])"
        );
        assert_eq!(plain_markdown("no links"), "no links");
    }
}
