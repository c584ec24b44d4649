//! `monty-native conformance DIR`: runs every `DIR/*.py` case natively and
//! prints one JSON object per line, sorted by name:
//! `{"name": ..., "status": "pass"|"fail"|"skip", "detail": ...}`.
//!
//! Each case runs through `MontyRun::start` on its own thread, with the
//! harness host ([`crate::host`]) answering every pause, a 10 s time limit,
//! a recursion limit of 50 (monty's own harness uses 50; the tracebacks of
//! the recursion cases count on it) and print output collected and dropped.

use std::{
    fs,
    panic::{self, AssertUnwindSafe},
    path::Path,
    sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
        mpsc,
    },
    thread,
    time::Duration,
};

use monty::{MontyRun, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyException, MontyObject, OsPolicy, PrintWriter,
    ResourceLimits, ResourceTracker, SandboxTimeZone,
};

use crate::{
    case::{self, Case, Expect},
    fixture::FixtureDir,
    host::{CallReply, Host, OsReply},
    json,
};

/// Time limit of one case.
pub const CASE_TIME_LIMIT: Duration = Duration::from_secs(10);
/// Recursion limit of every case.
pub const RECURSION_LIMIT: usize = 50;
/// Stack of the thread running a case (deep recursion cases recurse in Rust).
const CASE_STACK: usize = 256 << 20;

/// Result of one case.
pub struct Outcome {
    pub status: &'static str,
    pub detail: String,
}

impl Outcome {
    fn pass(detail: impl Into<String>) -> Self {
        Self {
            status: "pass",
            detail: detail.into(),
        }
    }
    fn fail(detail: impl Into<String>) -> Self {
        Self {
            status: "fail",
            detail: detail.into(),
        }
    }
    fn skip(detail: impl Into<String>) -> Self {
        Self {
            status: "skip",
            detail: detail.into(),
        }
    }
}

/// Runs the cases in `dir` (those whose name contains one of `only`, when
/// given) on `jobs` threads and prints the results.
pub fn run(dir: &Path, jobs: usize, only: &[String]) -> Result<(), String> {
    let mut files: Vec<_> = fs::read_dir(dir)
        .map_err(|e| format!("reading {}: {e}", dir.display()))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "py"))
        .filter(|p| {
            only.is_empty() || {
                let n = p
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned())
                    .unwrap_or_default();
                only.iter().any(|o| n.contains(o.as_str()))
            }
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(format!("no *.py test cases in {}", dir.display()));
    }
    install_panic_hook();
    let files = Arc::new(files);
    let next = Arc::new(AtomicUsize::new(0));
    let (tx, rx) = mpsc::channel();
    let mut workers = Vec::new();
    for _ in 0..jobs.max(1) {
        let (files, next, tx) = (files.clone(), next.clone(), tx.clone());
        workers.push(thread::spawn(move || {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(path) = files.get(i) else { break };
                let line = run_file(path);
                if tx.send((i, line)).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let mut lines: Vec<(usize, String)> = rx.iter().collect();
    for w in workers {
        let _ = w.join();
    }
    lines.sort_by_key(|(i, _)| *i);
    for (_, line) in lines {
        println!("{line}");
    }
    Ok(())
}

/// Runs one file and formats its JSON line.
fn run_file(path: &Path) -> String {
    let file_name = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let outcome = match fs::read_to_string(path) {
        Ok(content) => {
            let case = case::parse(&file_name, &content);
            run_isolated(case)
        }
        Err(e) => (
            file_name.trim_end_matches(".py").to_owned(),
            Outcome::fail(format!("cannot read: {e}")),
        ),
    };
    let (name, o) = outcome;
    format!(
        "{{\"name\": {}, \"status\": {}, \"detail\": {}}}",
        json::string(&name),
        json::string(o.status),
        json::string(&o.detail)
    )
}

/// Runs a case on its own big-stack thread, turning a panic into a failure.
fn run_isolated(case: Case) -> (String, Outcome) {
    let name = case.name.clone();
    let handle = thread::Builder::new()
        .name(format!("case {name}"))
        .stack_size(CASE_STACK)
        .spawn(move || {
            panic::catch_unwind(AssertUnwindSafe(|| check(&case))).unwrap_or_else(|_| {
                let msg = LAST_PANIC.lock().map(|m| m.clone()).unwrap_or_default();
                Outcome::fail(format!("panic: {msg}"))
            })
        });
    let outcome = match handle {
        Ok(h) => h
            .join()
            .unwrap_or_else(|_| Outcome::fail("case thread died")),
        Err(e) => Outcome::fail(format!("cannot start case thread: {e}")),
    };
    (name, outcome)
}

static LAST_PANIC: Mutex<String> = Mutex::new(String::new());

fn install_panic_hook() {
    panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_owned());
        let loc = info
            .location()
            .map(|l| format!(" at {l}"))
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC.lock() {
            *last = format!("{msg}{loc}");
        }
    }));
}

/// Runs a case and compares the outcome with its expectation.
pub fn check(case: &Case) -> Outcome {
    if !case.config.unknown.is_empty() {
        return Outcome::skip(format!(
            "unknown header keys: {}",
            case.config.unknown.join(", ")
        ));
    }
    if let Some(what) = case::needs_test_hooks(&case.code) {
        return Outcome::skip(format!(
            "needs {what}, which only monty's test-hooks build has (neither the wasm module nor this harness enables it)"
        ));
    }
    let result = match execute(case) {
        Ok(r) => r,
        Err(skip) => return Outcome::skip(skip),
    };
    let verdict = judge(&case.expect, result);
    match (case.config.xfail_monty, verdict) {
        (false, Ok(())) => Outcome::pass(""),
        (false, Err(why)) => Outcome::fail(why),
        (true, Ok(())) => Outcome::fail("xfail (monty): expected to fail but passed"),
        (true, Err(why)) => Outcome::pass(format!("xfail (monty) failed as expected: {why}")),
    }
}

/// Compares a run's result with the expectation.
fn judge(expect: &Expect, result: Result<MontyObject, MontyException>) -> Result<(), String> {
    match (expect, result) {
        (Expect::Return(want), Ok(v)) => eq("return repr", want, &v.py_repr()),
        (Expect::ReturnStr(want), Ok(v)) => eq("return str", want, &v.to_string()),
        (Expect::ReturnType(want), Ok(v)) => eq("return type", want, v.type_name()),
        (Expect::RefCounts(_) | Expect::NoException, Ok(_)) => Ok(()),
        (Expect::Raise(want) | Expect::Traceback(want), Ok(v)) => Err(format!(
            "expected exception {}, got value {}",
            case::shorten(want),
            case::shorten(&v.py_repr())
        )),
        (Expect::Raise(want), Err(e)) => eq("exception", want, &e.py_repr()),
        (Expect::Traceback(want), Err(e)) => eq("traceback", want, &e.to_string()),
        (_, Err(e)) => Err(format!(
            "unexpected exception: {}",
            case::shorten(&e.to_string())
        )),
    }
}

fn eq(what: &str, want: &str, got: &str) -> Result<(), String> {
    if want == got {
        Ok(())
    } else {
        Err(case::mismatch(what, want, got))
    }
}

/// Compiles and runs a case, answering its pauses. `Err` is a skip reason.
fn execute(case: &Case) -> Result<Result<MontyObject, MontyException>, String> {
    let cfg = &case.config;
    let mut policy = OsPolicy::default();
    if let Some(tz) = &cfg.timezone {
        policy.timezone =
            SandboxTimeZone::named(tz).map_err(|e| format!("unknown time zone {tz}: {e:?}"))?;
    }
    let (inputs, names) = if cfg.mount_fs {
        (
            vec![MontyObject::path("/mnt".to_owned())],
            vec!["root".to_owned()],
        )
    } else {
        (vec![], vec![])
    };
    let mut run = match MontyRun::new(
        case.code.clone(),
        &case.file_name,
        names,
        CompileOptions::default(),
    ) {
        Ok(r) => r.with_os_policy(policy),
        Err(e) => return Ok(Err(e)),
    };
    let fixture;
    let mounts = if cfg.mount_fs {
        fixture =
            FixtureDir::new().map_err(|e| format!("cannot create the fixture directory: {e}"))?;
        let mut table = monty_fs::MountTable::new();
        table
            .mount(
                "/mnt",
                fixture.path(),
                monty_fs::MountMode::from_mode_str("overlay").map_err(|e| e.clone())?,
                None,
            )
            .map_err(|e| format!("cannot mount the fixture: {e}"))?;
        run.set_cwd("/mnt");
        Some(table)
    } else {
        None
    };
    let limits = ResourceLimits {
        max_feed_duration: Some(CASE_TIME_LIMIT),
        max_recursion_depth: RECURSION_LIMIT,
        gc_interval: cfg.gc_interval,
        max_suspensions: usize::MAX,
        ..ResourceLimits::default()
    };
    let mut out = String::new();
    if !cfg.call_external && mounts.is_none() {
        // Standard execution, as monty's own harness runs these cases: no
        // host at all (an unknown name is a NameError raised at the name,
        // OS calls get the interpreter's no-handler answers, sleeps wait inline).
        return Ok(run.run(
            inputs,
            ResourceTracker::new(limits),
            PrintWriter::collect_string(&mut out),
        ));
    }
    let mut host = Host::new(cfg.call_external, mounts);
    let progress = run.start(
        inputs,
        ResourceTracker::new(limits),
        PrintWriter::collect_string(&mut out),
    );
    Ok(progress.and_then(|p| drive(p, &mut host, &mut out)))
}

/// Answers pauses until the run completes or raises.
fn drive(
    mut progress: RunProgress,
    host: &mut Host,
    out: &mut String,
) -> Result<MontyObject, MontyException> {
    loop {
        progress = match progress {
            RunProgress::Complete(v) => return Ok(v),
            RunProgress::FunctionCall(call) => {
                match host.call(&call.function_name, &call.args, call.object_id) {
                    CallReply::Now(r) => call.resume(r, PrintWriter::collect_string(out))?,
                    CallReply::Future(r) => {
                        host.add_pending(call.call_id, Duration::ZERO, r);
                        call.resume_pending(PrintWriter::collect_string(out))?
                    }
                }
            }
            RunProgress::NameLookup(lookup) => {
                let answer = host.lookup(&lookup.name, lookup.object_id());
                lookup.resume(answer, PrintWriter::collect_string(out))?
            }
            RunProgress::OsCall(call) => {
                let id = call.call_id;
                match host.os(call.function_call.clone()) {
                    OsReply::Now(r) => call.resume(r, PrintWriter::collect_string(out))?,
                    OsReply::Sleep(d) => {
                        thread::sleep(d.min(CASE_TIME_LIMIT));
                        call.resume(MontyObject::none(), PrintWriter::collect_string(out))?
                    }
                    OsReply::AsyncSleep(d) => {
                        host.add_pending(id, d.min(CASE_TIME_LIMIT), MontyObject::none().into());
                        call.resume(
                            ExtFunctionResult::Future(id),
                            PrintWriter::collect_string(out),
                        )?
                    }
                }
            }
            RunProgress::ResolveFutures(wait) => match host.resolve(wait.pending_call_ids()) {
                Some(results) => wait.resume(results, PrintWriter::collect_string(out))?,
                None => wait.abort(
                    MontyException::new(
                        ExcType::RuntimeError,
                        Some("awaiting futures the host never started".to_owned()),
                    ),
                    PrintWriter::collect_string(out),
                )?,
            },
        };
    }
}
