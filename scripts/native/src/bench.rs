//! `monty-native bench` and `monty-native serve`: the workloads the Go
//! benchmarks and `scripts/bench/table.sh` compare against, run in-process.
//!
//! The Python sources are read from `testdata/bench/` (the Go driver,
//! `scripts/bench/benchcmp`, reads the same files). A workload is named
//!
//! * after a program of that directory (`fib25` is `fib25.py`): compiled
//!   once into a `MontyRun`, one `run` per operation, with
//!   `ResourceTracker::default()` and print disabled;
//! * `dump_load_1mb`: a `MontyRepl` that ran `data_1mb.py` (10,000 distinct
//!   100-character strings, about 1 MB); one operation is `monty::dump` of
//!   the idle session plus `Dump::load` of the bytes;
//! * `new_interpreter`: `MontyRepl::new` plus the first feed of `tiny.py`.
//!
//! `bench` measures [`BENCH_WORKLOADS`] one after another, each warmed up
//! and then run in growing batches until at least `min_time` has passed,
//! and prints one JSON object. `serve` is `scripts/bench/benchcmp`'s worker: it
//! times what it is asked for on stdin, so that the driver can interleave
//! this column with the others.

use std::{
    collections::HashMap,
    fmt::Write as _,
    fs,
    hint::black_box,
    io::{self, BufRead as _, Write as _},
    path::Path,
    time::{Duration, Instant},
};

use monty::{Dump, MontyRepl, MontyRun, SessionRef, dump};
use monty_types::{CompileOptions, MontyObject, PrintWriter, ResourceTracker};

/// What `monty-native bench` measures.
const BENCH_WORKLOADS: [&str; 8] = [
    "tiny",
    "fib25",
    "loop",
    "sort",
    "join",
    "words",
    "dump_load_1mb",
    "new_interpreter",
];

/// A workload ready to run: compiled, its data loaded. There are a few at
/// most, so their size does not matter; no indirection is added to a run.
#[allow(clippy::large_enum_variant)]
enum Workload {
    /// A program, compiled once.
    Program(MontyRun),
    /// A REPL holding `data_1mb.py`, dumped and loaded per operation.
    DumpLoad(MontyRepl),
    /// The source of `tiny.py`, fed to a new REPL per operation.
    NewInterpreter(String),
}

impl Workload {
    fn prepare(dir: &Path, name: &str) -> Result<Self, String> {
        match name {
            "dump_load_1mb" => {
                let data = read(dir, "data_1mb.py")?;
                let mut repl = new_repl();
                repl.feed_run(&data, no_inputs(), PrintWriter::Disabled)
                    .map_err(|e| e.to_string())?;
                Ok(Self::DumpLoad(repl))
            }
            "new_interpreter" => Ok(Self::NewInterpreter(read(dir, "tiny.py")?)),
            _ if name.is_empty()
                || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') =>
            {
                Err(format!("no workload named {name:?}"))
            }
            _ => {
                let file = format!("{name}.py");
                MontyRun::new(read(dir, &file)?, &file, vec![], CompileOptions::default())
                    .map(Self::Program)
                    .map_err(|e| format!("{file}: {e}"))
            }
        }
    }

    /// One operation; a program's value (the other workloads have none).
    fn run(&mut self) -> Result<Option<MontyObject>, String> {
        match self {
            Self::Program(run) => run
                .run(vec![], ResourceTracker::default(), PrintWriter::Disabled)
                .map(Some)
                .map_err(|e| e.to_string()),
            Self::DumpLoad(repl) => {
                let bytes = dump("main.py", None, &[], SessionRef::Idle(repl))
                    .map_err(|e| e.to_string())?;
                black_box(Dump::load(&bytes).map_err(|e| e.to_string())?);
                Ok(None)
            }
            Self::NewInterpreter(tiny) => {
                let mut repl = new_repl();
                black_box(
                    repl.feed_run(tiny, no_inputs(), PrintWriter::Disabled)
                        .map_err(|e| e.to_string())?,
                );
                Ok(None)
            }
        }
    }
}

fn new_repl() -> MontyRepl {
    MontyRepl::new(
        "main.py",
        ResourceTracker::default(),
        CompileOptions::default(),
    )
}

fn no_inputs() -> Vec<(String, MontyObject)> {
    Vec::new()
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    fs::read_to_string(dir.join(name))
        .map_err(|e| format!("reading {}: {e}", dir.join(name).display()))
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

/// Measures the workloads of [`BENCH_WORKLOADS`] whose name contains
/// `only` (all when empty) and prints one JSON object.
pub fn run(dir: &Path, min_time: Duration, only: &str) -> Result<(), String> {
    let mut out = format!(
        "{{\"monty_version\": \"{}\", \"workloads\": {{",
        monty_types::MONTY_VERSION
    );
    let mut first = true;
    for name in BENCH_WORKLOADS.into_iter().filter(|n| n.contains(only)) {
        let mut workload = Workload::prepare(dir, name)?;
        let value = workload.run()?;
        let (ns, n) = measure(min_time, || {
            black_box(workload.run().expect(name));
        });
        if !first {
            out.push_str(", ");
        }
        first = false;
        let _ = write!(
            out,
            "\"{name}\": {{\"ns_per_op\": {ns:.1}, \"iterations\": {n}"
        );
        if let Some(v) = value {
            let _ = write!(out, ", \"value\": {}", crate::json::string(&v.py_repr()));
        }
        out.push('}');
    }
    out.push_str("}}");
    println!("{out}");
    Ok(())
}

/// `scripts/bench/benchcmp`'s worker. Each line of stdin is a request "NAME N":
/// run workload NAME (prepared at its first request, untimed) N times. The
/// answer, one line on stdout, is "NS REPR": the mean ns of one run and the
/// repr of the last run's value (for a program; nothing after NS for the
/// other workloads), or "error MESSAGE". Ends at the end of stdin.
pub fn serve(dir: &Path) -> Result<(), String> {
    let mut prepared = HashMap::new();
    let mut out = io::stdout().lock();
    for line in io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("reading stdin: {e}"))?;
        let answer = answer(dir, &mut prepared, &line)
            .unwrap_or_else(|e| format!("error {}", e.replace('\n', " ")));
        writeln!(out, "{answer}")
            .and_then(|()| out.flush())
            .map_err(|e| format!("writing stdout: {e}"))?;
    }
    Ok(())
}

fn answer(
    dir: &Path,
    prepared: &mut HashMap<String, Workload>,
    line: &str,
) -> Result<String, String> {
    let (name, n) = line
        .split_once(' ')
        .ok_or_else(|| format!("want \"NAME N\", got {line:?}"))?;
    let n: u32 = n.parse().map_err(|e| format!("N of {line:?}: {e}"))?;
    if n == 0 {
        return Err("N must be at least 1".to_owned());
    }
    if !prepared.contains_key(name) {
        prepared.insert(name.to_owned(), Workload::prepare(dir, name)?);
    }
    let workload = prepared.get_mut(name).expect("prepared above");
    let mut last = None;
    let start = Instant::now();
    for _ in 0..n {
        last = black_box(workload.run()?);
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(n);
    Ok(match last {
        Some(v) => format!("{ns:.1} {}", v.py_repr()),
        None => format!("{ns:.1}"),
    })
}
