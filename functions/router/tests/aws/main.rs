//! The router Lambda against real protocol endpoints on 127.0.0.1: `moto_server` for S3 and
//! DynamoDB (`SWITCHYARD_TEST_MOTO_URL`) and `cargo lambda watch` running the adapter
//! binary (`SWITCHYARD_TEST_LAMBDA_URL`); `./infra/scripts/aws-local.sh start` starts both
//! and `./infra/scripts/test.sh` sets the variables. Failure injection (a Lambda endpoint
//! that stalls or fails, a DynamoDB that is not there) uses small servers of its own.
//!
//! The modules: `setup` (the emulators' clients, fresh buckets and tables, the demo index,
//! requests through the router's handler), `index` (the index in S3 and the cold start that
//! reads it), `sessions` (the session, topic and feedback tables), `rerank` (the rerank
//! cache table), `adapters` (adapter functions invoked through Lambda, and their failures),
//! `workflows` (checkpoints of split questions, and resuming from them), `privacy` (feedback
//! from the answer's caller alone, read consistently; A2A tasks without texts, forgotten
//! with their session), `iam` (the stores under the template's policies, on the
//! moto_server that enforces IAM).

mod adapters;
mod encoder;
mod iam;
mod index;
mod privacy;
mod rerank;
mod sessions;
mod setup;
#[path = "../common/template_yaml.rs"]
mod template_yaml;
mod workflows;
