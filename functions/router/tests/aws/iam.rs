//! What AWS would deny: the stores the functions use, run under principals holding exactly
//! the policies `template.yaml` gives each function, against a `moto_server` that enforces
//! IAM (`SWITCHYARD_TEST_MOTO_IAM_URL`, started by `./infra/scripts/aws-local.sh`). A
//! missing action is an `AccessDenied` here, not a store error counted in production.
//!
//! The policies are read from the template, not copied. moto checks S3 actions against
//! the object's ARN, so S3 statements keep their resources (bucket and prefix filled in).
//! For DynamoDB moto checks the action only (every request's resource is `*`), so each
//! table gets a principal of its own holding the actions of the statements that name that
//! table's ARN: a grant on the wrong table is then a denial here too. Lambda invokes go to
//! `cargo lambda watch`, which checks no IAM; `tests/template.rs` ties each invoked
//! function to the template.
//!
//! The server's authentication is switched off while the tables and principals are made
//! and on for the calls (`/moto-api/reset-auth`): this test is that server's only user.

use std::collections::BTreeSet;

use serde_json::{json, Value};
use switchyard_aws::{
    DynamoFeedbackStore, DynamoRerankCache, DynamoSessionStore, DynamoTopicStore,
    DynamoWorkflowStore,
};
use switchyard_catalog::clock::unix_now;
use switchyard_core::feedback::{Decision, Feedback, FeedbackStore};
use switchyard_core::orchestration::{Checkpoint, WorkflowStore};
use switchyard_core::rerank_cache::{CachedScores, RerankCache};
use switchyard_routing::config::SessionsConfig;
use switchyard_routing::router::Outcome;
use switchyard_routing::session::SessionStore;
use switchyard_routing::topics::{TopicStore, Topics};
use switchyard_s3::{chunks_prefix, S3DataStore, S3IndexStore};

use crate::sessions::executed;
use crate::setup::{create_bucket, create_table, unique};
use crate::template_yaml::template;

fn list(value: &Value) -> Vec<String> {
    match value {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Every statement of a function's inline policies.
fn statements(template: &Value, function: &str) -> Vec<Value> {
    let policies = &template["Resources"][function]["Properties"]["Policies"];
    policies
        .as_array()
        .map(|ps| {
            ps.iter()
                .flat_map(|p| p["Statement"].as_array().cloned().unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

/// The DynamoDB actions `function` may take on the table the template names `table`.
fn table_actions(template: &Value, function: &str, table: &str) -> BTreeSet<String> {
    let arn = format!("{table}.Arn");
    statements(template, function)
        .iter()
        .filter(|s| s["Effect"] == "Allow" && list(&s["Resource"]).contains(&arn))
        .flat_map(|s| list(&s["Action"]))
        .filter(|a| a.starts_with("dynamodb:"))
        .collect()
}

/// The S3 statements of `function`, with the bucket and prefix filled in.
fn s3_statements(template: &Value, function: &str, bucket: &str, prefix: &str) -> Vec<Value> {
    statements(template, function)
        .into_iter()
        .filter(|s| list(&s["Action"]).iter().any(|a| a.starts_with("s3:")))
        .map(|mut s| {
            let resources: Vec<Value> = list(&s["Resource"])
                .iter()
                .map(|r| {
                    Value::String(
                        r.replace("${AWS::Partition}", "aws")
                            .replace("${IndexBucket}", bucket)
                            .replace("${IndexPrefix}", prefix),
                    )
                })
                .collect();
            s["Resource"] = Value::Array(resources);
            s
        })
        .collect()
}

/// The logical id of the table a function's variable names (`!Ref SessionsTable`).
fn table_of(template: &Value, function: &str, variable: &str) -> String {
    template["Resources"][function]["Properties"]["Environment"]["Variables"][variable]
        .as_str()
        .unwrap_or_else(|| panic!("{function} has no variable {variable}"))
        .to_owned()
}

/// The moto server that enforces IAM, with its authentication off or on.
struct Moto {
    url: String,
    http: reqwest::Client,
}

impl Moto {
    async fn authentication(&self, on: bool) {
        // The number of requests served before authentication starts.
        let count = if on { "0" } else { "1000000000" };
        let response = self
            .http
            .post(format!("{}/moto-api/reset-auth", self.url))
            .body(count)
            .send()
            .await
            .unwrap();
        assert!(
            response.status().is_success(),
            "{:?}",
            response.text().await
        );
    }

    /// One IAM Query API call (while authentication is off: the request is not signed,
    /// the Authorization header only tells moto which service it is for).
    async fn iam(&self, action: &str, params: &[(&str, &str)]) -> String {
        let mut form = vec![("Action", action), ("Version", "2010-05-08")];
        form.extend_from_slice(params);
        let response = self
            .http
            .post(format!("{}/", self.url))
            .header(
                "Authorization",
                "AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/iam/aws4_request, SignedHeaders=host, Signature=0",
            )
            .form(&form)
            .send()
            .await
            .unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        assert!(status.is_success(), "IAM {action}: {status} {text}");
        text
    }

    /// A user holding exactly `statements` (none: a user allowed nothing), and its keys.
    async fn principal(&self, name: &str, statements: Vec<Value>) -> (String, String) {
        self.iam("CreateUser", &[("UserName", name)]).await;
        if !statements.is_empty() {
            let policy = json!({"Version": "2012-10-17", "Statement": statements}).to_string();
            self.iam(
                "PutUserPolicy",
                &[
                    ("UserName", name),
                    ("PolicyName", "template"),
                    ("PolicyDocument", &policy),
                ],
            )
            .await;
        }
        let keys = self.iam("CreateAccessKey", &[("UserName", name)]).await;
        let element = |tag: &str| {
            let start = keys.find(&format!("<{tag}>")).unwrap() + tag.len() + 2;
            let end = keys.find(&format!("</{tag}>")).unwrap();
            keys[start..end].to_owned()
        };
        (element("AccessKeyId"), element("SecretAccessKey"))
    }

    async fn sdk(&self, keys: &(String, String)) -> aws_config::SdkConfig {
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(&self.url)
            .region(aws_config::Region::new("us-east-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                &keys.0, &keys.1, None, None, "iam-test",
            ))
            .load()
            .await
    }
}

/// A table of the template's, made in moto under a fresh name, and the principal of
/// `function` for it.
struct Table {
    name: String,
    client: aws_sdk_dynamodb::Client,
}

async fn table(
    moto: &Moto,
    admin: &aws_sdk_dynamodb::Client,
    template: &Value,
    function: &str,
    variable: &str,
) -> Table {
    let logical = table_of(template, function, variable);
    let key = template["Resources"][&logical]["Properties"]["KeySchema"][0]["AttributeName"]
        .as_str()
        .unwrap_or_else(|| panic!("{logical} has no key"))
        .to_owned();
    let name = create_table(admin, &key).await;
    // moto sees every DynamoDB request's resource as `*`: the actions the template grants
    // on this table's ARN, on `*`, for a principal used with this table alone.
    let actions: Vec<String> = table_actions(template, function, &logical)
        .into_iter()
        .collect();
    let statements = if actions.is_empty() {
        Vec::new()
    } else {
        vec![json!({"Effect": "Allow", "Action": actions, "Resource": "*"})]
    };
    let keys = moto
        .principal(&unique(&format!("{function}-{logical}")), statements)
        .await;
    let client = aws_sdk_dynamodb::Client::new(&moto.sdk(&keys).await);
    Table { name, client }
}

fn denied(error: &impl std::fmt::Display) -> bool {
    let text = format!("{error}");
    text.contains("AccessDenied") || text.contains("not authorized")
}

/// The call's value, or a failure naming the call and, when it was refused, saying so
/// (moto answers a denial in XML, which the DynamoDB client reports as a parse error).
fn allowed<T, E: std::fmt::Debug + std::fmt::Display>(call: &str, result: Result<T, E>) -> T {
    result.unwrap_or_else(|e| {
        let refused = if denied(&format!("{e:?}")) {
            "AccessDenied: template.yaml does not grant it. "
        } else {
            ""
        };
        panic!("{call}: {refused}{e}")
    })
}

#[tokio::test]
async fn the_functions_policies_allow_every_call_their_code_makes() {
    let url = std::env::var("SWITCHYARD_TEST_MOTO_IAM_URL").unwrap_or_else(|_| {
        panic!("SWITCHYARD_TEST_MOTO_IAM_URL is not set: start the emulators with ./infra/scripts/aws-local.sh start and export what `aws-local.sh env` prints (./infra/scripts/test.sh does both)")
    });
    let moto = Moto {
        url,
        http: reqwest::Client::new(),
    };
    let template = template();
    let router = "RouterFunction";

    // Set-up, unauthenticated: tables, the bucket and its artifacts, the principals.
    moto.authentication(false).await;
    let setup_keys = ("setup".to_owned(), "setup".to_owned());
    let admin_config = moto.sdk(&setup_keys).await;
    let admin = aws_sdk_dynamodb::Client::new(&admin_config);
    let sessions = table(
        &moto,
        &admin,
        &template,
        router,
        "SWITCHYARD_SESSIONS_TABLE",
    )
    .await;
    let workflows = table(
        &moto,
        &admin,
        &template,
        router,
        "SWITCHYARD_WORKFLOW_TABLE",
    )
    .await;
    let feedback = table(
        &moto,
        &admin,
        &template,
        router,
        "SWITCHYARD_FEEDBACK_TABLE",
    )
    .await;
    let rerank = table(
        &moto,
        &admin,
        &template,
        router,
        "SWITCHYARD_RERANK_CACHE_TABLE",
    )
    .await;
    let topics = table(&moto, &admin, &template, router, "SWITCHYARD_TOPICS_TABLE").await;

    let prefix = "indexes";
    let admin_s3 = switchyard_s3::s3_client(&admin_config);
    let bucket = create_bucket(&admin_s3).await;
    // Artifacts as the router and a documents adapter read them: a pointer and its
    // object (their content is not checked here beyond the pointer's hash).
    for store_prefix in [prefix.to_owned(), chunks_prefix(prefix, "policies")] {
        let body = b"artifact bytes".to_vec();
        let sha256 = {
            use sha2::Digest;
            hex::encode(sha2::Sha256::digest(&body))
        };
        let key = format!("{store_prefix}/{sha256}.idx");
        let pointer = json!({"key": key, "sha256": sha256, "bytes": body.len()});
        for (key, body) in [
            (key.clone(), body),
            (
                format!("{store_prefix}/current"),
                pointer.to_string().into(),
            ),
        ] {
            admin_s3
                .put_object()
                .bucket(&bucket)
                .key(key)
                .body(body.into())
                .send()
                .await
                .unwrap();
        }
    }
    // The ev adapter's data, and another datasource's, published as `index push` does.
    let data = tempfile::tempdir().unwrap();
    let csv = data.path().join("rows.csv");
    std::fs::write(&csv, "id,make\n1,Tesla\n").unwrap();
    for datasource in ["ev", "hr"] {
        S3DataStore::new(admin_s3.clone(), &bucket, prefix, datasource)
            .push(&[("data/rows.csv".to_owned(), csv.clone())])
            .await
            .unwrap();
    }
    let s3_of = |function: &str| s3_statements(&template, function, &bucket, prefix);
    let router_s3_keys = moto.principal(&unique("router-s3"), s3_of(router)).await;
    let policies_keys = moto
        .principal(&unique("policies-s3"), s3_of("PoliciesAdapterFunction"))
        .await;
    let ev_keys = moto
        .principal(&unique("ev-s3"), s3_of("EvAdapterFunction"))
        .await;
    let ev_s3 = switchyard_s3::s3_client(&moto.sdk(&ev_keys).await);
    let router_s3 = switchyard_s3::s3_client(&moto.sdk(&router_s3_keys).await);
    let policies_s3 = switchyard_s3::s3_client(&moto.sdk(&policies_keys).await);

    moto.authentication(true).await;

    // Enforcement is on: what no statement grants is denied (the router never scans).
    let scan = workflows
        .client
        .scan()
        .table_name(&workflows.name)
        .send()
        .await;
    assert!(
        scan.as_ref().is_err_and(|e| denied(&format!("{e:?}"))),
        "a Scan the template does not grant must be denied: {scan:?}"
    );

    let now = unix_now();
    let session_store = DynamoSessionStore::new(
        sessions.client.clone(),
        &sessions.name,
        SessionsConfig::default(),
    );
    allowed(
        "sessions: append (GetItem, PutItem)",
        session_store.append("s-1", executed(1, now)).await,
    );
    assert_eq!(
        allowed(
            "sessions: recent (GetItem)",
            session_store.recent("s-1", now).await
        )
        .len(),
        1
    );
    assert!(allowed(
        "sessions: forget (DeleteItem)",
        session_store.delete("s-1").await
    ));

    // A split question's run: checkpoint, lease, release (DeleteItem), resume.
    let workflow_store = DynamoWorkflowStore::new(workflows.client.clone(), &workflows.name);
    let checkpoint = Checkpoint::new(
        "wf-1".into(),
        "What is 15% of 200 and what time is it?".into(),
        Vec::new(),
        Vec::new(),
        now,
        now + 3600,
    );
    assert!(allowed(
        "workflows: claim a lease (PutItem)",
        workflow_store
            .claim("wf-1#lease", "token", now, now + 30)
            .await
    ));
    allowed(
        "workflows: checkpoint (PutItem)",
        workflow_store.save(&checkpoint).await,
    );
    allowed(
        "workflows: release the lease (DeleteItem)",
        workflow_store.release("wf-1#lease", "token").await,
    );
    assert!(
        workflow_store
            .claim("wf-1#lease", "another", now, now + 30)
            .await
            .unwrap(),
        "a released lease is free at once"
    );
    assert!(allowed(
        "workflows: resume (GetItem)",
        workflow_store.load("wf-1", now).await
    )
    .is_some());

    // An A2A task: kept beside the checkpoints, found by the caller's next message, listed
    // in its context's item and forgotten with it.
    allowed(
        "workflows: keep an A2A task (UpdateItem, PutItem)",
        workflow_store
            .save_task(
                "owner/t-1#task",
                "owner/c-1#context",
                "{\"id\":\"t-1\"}",
                now + 3600,
            )
            .await,
    );
    assert_eq!(
        allowed(
            "workflows: find an A2A task (GetItem)",
            workflow_store.load_task("owner/t-1#task", now).await
        )
        .as_deref(),
        Some("{\"id\":\"t-1\"}")
    );
    assert_eq!(
        allowed(
            "workflows: forget a context's tasks (GetItem, DeleteItem)",
            workflow_store.forget_context("owner/c-1#context").await
        ),
        1
    );

    let feedback_store = DynamoFeedbackStore::new(feedback.client.clone(), &feedback.name, 3600);
    let decision = Decision {
        request_id: "r-1".into(),
        datasource: Some("tools".into()),
        template_id: Some("calculator_percentage".into()),
        outcome: Outcome::Execute,
        confidence: 0.9,
        margin: Some(0.2),
        threshold: 0.5,
        processing_ms: 3.0,
        at: now,
        query: None,
        session_id: None,
    };
    allowed(
        "feedback: record (PutItem)",
        feedback_store.record("r-1", decision).await,
    );
    let judged = feedback_store
        .judge(
            "r-1",
            Feedback {
                user_satisfaction: Some(1.0),
                agent_success: Some(true),
                search_quality: None,
                expected_template: None,
            },
        )
        .await
        .unwrap();
    assert!(judged.is_some());

    let cache = DynamoRerankCache::new(rerank.client.clone(), &rerank.name);
    cache
        .put(
            "k-1",
            CachedScores {
                scores: vec![0.5, 0.25],
                expires_at: now + 60,
            },
        )
        .await
        .unwrap();
    assert_eq!(cache.get("k-1", now).await.unwrap(), Some(vec![0.5, 0.25]));

    let topic_store = DynamoTopicStore::new(topics.client.clone(), &topics.name, 3600);
    topic_store
        .save("sub:ann", &Topics::default(), now)
        .await
        .unwrap();
    topic_store.load("sub:ann", now).await.unwrap();

    // S3: the router reads the index; the documents adapter its own chunks, nothing else.
    S3IndexStore::new(router_s3.clone(), &bucket, prefix)
        .fetch_current()
        .await
        .unwrap();
    let chunks = chunks_prefix(prefix, "policies");
    S3IndexStore::new(policies_s3.clone(), &bucket, &chunks)
        .fetch_current()
        .await
        .unwrap();
    let foreign = S3IndexStore::new(policies_s3, &bucket, prefix)
        .fetch_current()
        .await;
    assert!(
        foreign.as_ref().is_err_and(|e| denied(&format!("{e:?}"))),
        "the policies adapter must not read the router's index: {foreign:?}"
    );

    // The DuckDB adapter fetches its own data at cold start, and nothing else.
    let paths = ["data/rows.csv".to_owned()];
    S3DataStore::new(ev_s3.clone(), &bucket, prefix, "ev")
        .fetch(&paths, &data.path().join("ev"))
        .await
        .unwrap();
    let foreign = S3DataStore::new(ev_s3.clone(), &bucket, prefix, "hr")
        .fetch(&paths, &data.path().join("hr"))
        .await;
    assert!(
        foreign.as_ref().is_err_and(|e| denied(&format!("{e:?}"))),
        "the ev adapter must not read another datasource's data: {foreign:?}"
    );
    let index = S3IndexStore::new(ev_s3, &bucket, prefix)
        .fetch_current()
        .await;
    assert!(
        index.as_ref().is_err_and(|e| denied(&format!("{e:?}"))),
        "the ev adapter must not read the router's index: {index:?}"
    );
}
