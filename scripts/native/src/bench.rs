//! `monty-native bench`: nanoseconds per operation of the workloads the Go
//! benchmarks and `scripts/bench.sh` compare against, measured in-process.
//!
//! The Python sources are read from `testdata/bench/` (the Go benchmarks
//! read the same files):
//!
//! * `tiny_call`: a compiled `MontyRun` of `tiny.py` (`1 + 1`), `run` with
//!   `ResourceTracker::default()` and print disabled.
//! * `fib25`: `fib25.py` compiled once, one run per operation.
//! * `repl_dump_load_1mb`: a `MontyRepl` that ran `data_1mb.py` (10,000
//!   distinct 100-character strings, about 1 MB); one operation is
//!   `monty::dump` of the idle session plus `Dump::load` of the bytes.
//! * `new_repl`: `MontyRepl::new` plus the first feed of `tiny.py`.
//!
//! Each workload is warmed up, then run in growing batches until at least
//! `min_time` has passed.

use std::{
    fmt::Write as _,
    fs,
    hint::black_box,
    path::Path,
    time::{Duration, Instant},
};

use monty::{Dump, MontyRepl, MontyRun, SessionRef, dump};
use monty_types::{CompileOptions, MontyObject, PrintWriter, ResourceTracker};

/// One measured workload.
struct Measurement {
    name: &'static str,
    ns_per_op: f64,
    iterations: u64,
    extra: Option<(&'static str, u64)>,
}

/// Runs `op` until `min_time` has passed; returns ns/op and iterations.
fn measure(min_time: Duration, mut op: impl FnMut()) -> (f64, u64) {
    op(); // warm up
    let mut total_iters = 0u64;
    let mut total = Duration::ZERO;
    let mut batch = 1u64;
    while total < min_time {
        let start = Instant::now();
        for _ in 0..batch {
            op();
        }
        total += start.elapsed();
        total_iters += batch;
        if batch < 1 << 20 {
            batch *= 2;
        }
    }
    (total.as_nanos() as f64 / total_iters as f64, total_iters)
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    fs::read_to_string(dir.join(name))
        .map_err(|e| format!("reading {}: {e}", dir.join(name).display()))
}

fn compile(code: &str, name: &str) -> Result<MontyRun, String> {
    MontyRun::new(code.to_owned(), name, vec![], CompileOptions::default())
        .map_err(|e| format!("{name}: {e}"))
}

fn no_inputs() -> Vec<(String, MontyObject)> {
    Vec::new()
}

/// Measures the workloads whose name contains `only` (all when empty) and
/// prints one JSON object.
pub fn run(dir: &Path, min_time: Duration, only: &str) -> Result<(), String> {
    let tiny = read(dir, "tiny.py")?;
    let fib = read(dir, "fib25.py")?;
    let data = read(dir, "data_1mb.py")?;
    let wanted = |name: &str| only.is_empty() || name.contains(only);
    let mut results = Vec::new();

    if wanted("tiny_call") {
        let mut run = compile(&tiny, "tiny.py")?;
        run.run(vec![], ResourceTracker::default(), PrintWriter::Disabled)
            .map_err(|e| e.to_string())?;
        let (ns, n) = measure(min_time, || {
            black_box(
                run.run(vec![], ResourceTracker::default(), PrintWriter::Disabled)
                    .expect("tiny run"),
            );
        });
        results.push(Measurement {
            name: "tiny_call",
            ns_per_op: ns,
            iterations: n,
            extra: None,
        });
    }

    if wanted("fib25") {
        let mut run = compile(&fib, "fib25.py")?;
        let v = run
            .run(vec![], ResourceTracker::default(), PrintWriter::Disabled)
            .map_err(|e| e.to_string())?;
        if v != MontyObject::int(75025) {
            return Err(format!("fib25.py returned {}, expected 75025", v.py_repr()));
        }
        let (ns, n) = measure(min_time, || {
            black_box(
                run.run(vec![], ResourceTracker::default(), PrintWriter::Disabled)
                    .expect("fib run"),
            );
        });
        results.push(Measurement {
            name: "fib25",
            ns_per_op: ns,
            iterations: n,
            extra: None,
        });
    }

    if wanted("repl_dump_load_1mb") {
        let mut repl = MontyRepl::new(
            "main.py",
            ResourceTracker::default(),
            CompileOptions::default(),
        );
        repl.feed_run(&data, no_inputs(), PrintWriter::Disabled)
            .map_err(|e| e.to_string())?;
        let size = dump("main.py", None, &[], SessionRef::Idle(&repl))
            .map_err(|e| e.to_string())?
            .len();
        let (ns, n) = measure(min_time, || {
            let bytes = dump("main.py", None, &[], SessionRef::Idle(&repl)).expect("dump");
            black_box(Dump::load(&bytes).expect("load"));
        });
        results.push(Measurement {
            name: "repl_dump_load_1mb",
            ns_per_op: ns,
            iterations: n,
            extra: Some(("dump_bytes", size as u64)),
        });
    }

    if wanted("new_repl") {
        let (ns, n) = measure(min_time, || {
            let mut repl = MontyRepl::new(
                "main.py",
                ResourceTracker::default(),
                CompileOptions::default(),
            );
            black_box(
                repl.feed_run(&tiny, no_inputs(), PrintWriter::Disabled)
                    .expect("first feed"),
            );
        });
        results.push(Measurement {
            name: "new_repl",
            ns_per_op: ns,
            iterations: n,
            extra: None,
        });
    }

    let mut out = format!(
        "{{\"monty_version\": \"{}\", \"workloads\": {{",
        monty_types::MONTY_VERSION
    );
    for (i, m) in results.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "\"{}\": {{\"ns_per_op\": {:.1}, \"iterations\": {}",
            m.name, m.ns_per_op, m.iterations
        );
        if let Some((k, v)) = m.extra {
            let _ = write!(out, ", \"{k}\": {v}");
        }
        out.push('}');
    }
    out.push_str("}}");
    println!("{out}");
    Ok(())
}
