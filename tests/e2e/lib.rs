//! Helpers for end-to-end tests: run the `switchyard` binary the way a user does.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `switchyard` binary of this build (cargo builds it before integration tests): beside
/// the `deps` folder this test runs from, whatever the target directory, profile or
/// `--target`.
pub fn switchyard_binary() -> PathBuf {
    let test = std::env::current_exe().expect("the test binary's path");
    let binary = test
        .parent()
        .and_then(Path::parent)
        .expect("the test binary runs from <target>/<profile>/deps")
        .join("switchyard");
    assert!(
        binary.is_file(),
        "{} is missing: build it with `cargo build -p switchyard-cli`",
        binary.display()
    );
    binary
}

/// A `switchyard` command run from the repository root, with its own index cache and the
/// defaults users get: a catalog of five templates or more (the demo's) is routed with the
/// encoder adapted to it. The adapted encoders are shared by every test and with the
/// caller's own cache ([`encoder_cache`]), so a run trains each catalog's encoder once
/// (parallel tests wait for the one training) and `test.sh`'s later servers find it.
pub fn switchyard(cache: &Path) -> Command {
    let encoders = cache.join("encoders");
    if !encoders.exists() {
        let shared = encoder_cache();
        std::fs::create_dir_all(&shared).expect("the shared encoder cache can be made");
        std::os::unix::fs::symlink(&shared, &encoders).expect("the encoder cache links");
    }
    let mut command = Command::new(switchyard_binary());
    command
        .current_dir(repo_root())
        .env("SWITCHYARD_CACHE_DIR", cache)
        .env("SWITCHYARD_MODEL_DIR", model_dir())
        .env("RUST_LOG", "warn");
    command
}

/// [`switchyard`] on the base model (`embedding.adaptation.mode: base`), for the CLINC150
/// catalog: adapting to its 150 templates takes 7 to 15 minutes here, a cost `eval`
/// measures once rather than every test run.
pub fn switchyard_base(cache: &Path) -> Command {
    let mut command = switchyard(cache);
    command.env("SWITCHYARD__EMBEDDING__ADAPTATION__MODE", "base");
    command
}

/// The adapted encoders of the caller's cache: `$SWITCHYARD_CACHE_DIR/encoders`, else
/// `$XDG_CACHE_HOME/switchyard/encoders` or `~/.cache/switchyard/encoders`, where
/// `switchyard` itself keeps them.
pub fn encoder_cache() -> PathBuf {
    let cache = std::env::var_os("SWITCHYARD_CACHE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| user_cache().join("switchyard"));
    cache.join("encoders")
}

fn user_cache() -> PathBuf {
    std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache")
        })
}

/// Where the model is: the caller's SWITCHYARD_MODEL_DIR or the default cache location.
/// A copy of the folder `from` (a catalog) at `to`, to edit in a test.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

pub fn model_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("SWITCHYARD_MODEL_DIR") {
        return PathBuf::from(dir);
    }
    user_cache().join("switchyard/models/all-MiniLM-L6-v2")
}

/// Run and return stdout; panic with stderr if the command failed.
pub fn run_ok(command: &mut Command) -> String {
    let output = command.output().expect("switchyard runs");
    assert!(
        output.status.success(),
        "{command:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8 output")
}

pub fn run(command: &mut Command) -> Output {
    command.output().expect("switchyard runs")
}

/// A `switchyard serve` process on a free port of 127.0.0.1, stopped when dropped.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub base: String,
}

impl Server {
    /// POST `body` as JSON to `path`: the status and the JSON answer.
    pub fn post(&self, path: &str, body: serde_json::Value) -> (u16, serde_json::Value) {
        let response = reqwest::blocking::Client::new()
            .post(format!("{}{path}", self.base))
            .json(&body)
            .send()
            .unwrap();
        (response.status().as_u16(), response.json().unwrap())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `switchyard <options> serve --port 0` (options such as `--templates DIR`,
/// `--config FILE`) and wait for the line saying where it listens.
pub fn serve<S: AsRef<OsStr>>(cache: &Path, options: &[S]) -> Server {
    serve_with_logs(cache, options, Stdio::inherit(), "warn")
}

/// [`serve`], logging at `level` (a RUST_LOG filter) to `logs` (its stderr).
pub fn serve_with_logs<S: AsRef<OsStr>>(
    cache: &Path,
    options: &[S],
    logs: Stdio,
    level: &str,
) -> Server {
    serve_command(switchyard(cache), options, logs, level)
}

/// [`serve`] on the base model ([`switchyard_base`]).
pub fn serve_base<S: AsRef<OsStr>>(cache: &Path, options: &[S]) -> Server {
    serve_command(switchyard_base(cache), options, Stdio::inherit(), "warn")
}

/// `<command> <options> serve --port 0`, for a [`switchyard`] command given more
/// environment; logs at `level` to `logs`.
pub fn serve_command<S: AsRef<OsStr>>(
    command: Command,
    options: &[S],
    logs: Stdio,
    level: &str,
) -> Server {
    serve_command_with(command, options, &[] as &[&str], logs, level)
}

/// [`serve_command`] with `serve`'s own options after it (`--traffic FILE`).
pub fn serve_command_with<S: AsRef<OsStr>, T: AsRef<OsStr>>(
    mut command: Command,
    options: &[S],
    serve_options: &[T],
    logs: Stdio,
    level: &str,
) -> Server {
    let mut child = command
        .env("RUST_LOG", level)
        .args(options)
        .args(["serve", "--port", "0"])
        .args(serve_options)
        .stdout(Stdio::piped())
        .stderr(logs)
        .spawn()
        .expect("serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("switchyard listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_owned();
    assert!(base.starts_with("http://127.0.0.1:"), "{base}");
    Server { child, base }
}

/// Serve `app` on a free port of 127.0.0.1 from its own thread for the rest of the test
/// process: the stand-in for a server the binary under test calls (a chat model, a rerank
/// provider, a web site). Gives its address.
pub fn serve_app(app: axum::Router) -> std::net::SocketAddr {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime for the test server");
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("a free port on 127.0.0.1");
            sender.send(listener.local_addr().unwrap()).unwrap();
            axum::serve(listener, app).await.unwrap();
        });
    });
    receiver.recv().expect("the test server starts")
}
