//! `monty-native`: runs monty 1.4.0 natively, as the reference the Go
//! runtime (monty compiled to wasm) is compared against.
//!
//! ```text
//! monty-native conformance DIR [--jobs N] [NAME-SUBSTRING...]
//! monty-native bench [--dir testdata/bench] [--min-time-ms 1000] [--only NAME]
//! monty-native serve [--dir testdata/bench]
//! ```

mod bench;
mod case;
mod conformance;
mod fixture;
mod host;
mod json;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    time::Duration,
};

const USAGE: &str = "usage:
  monty-native conformance DIR [--jobs N] [NAME-SUBSTRING...]
      run every DIR/*.py monty test case; one JSON object per line
  monty-native bench [--dir DIR] [--min-time-ms MS] [--only NAME]
      time the testdata/bench workloads; one JSON object
  monty-native serve [--dir DIR]
      time what stdin asks for, a line \"NAME N\" at a time (scripts/bench/benchcmp's worker)";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("conformance") => conformance_cmd(&args[1..]),
        Some("bench") => bench_cmd(&args[1..]),
        Some("serve") => serve_cmd(&args[1..]),
        Some("-h" | "--help" | "help") => {
            println!("{USAGE}");
            Ok(())
        }
        _ => Err(USAGE.to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("monty-native: {msg}");
            ExitCode::from(2)
        }
    }
}

fn value<'a>(
    args: &mut impl Iterator<Item = &'a String>,
    flag: &str,
) -> Result<&'a String, String> {
    args.next().ok_or_else(|| format!("{flag} needs a value"))
}

fn conformance_cmd(args: &[String]) -> Result<(), String> {
    let mut dir = None;
    let mut jobs = std::thread::available_parallelism().map_or(4, usize::from);
    let mut only = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--jobs" | "-j" => {
                jobs = value(&mut it, a)?
                    .parse()
                    .map_err(|e| format!("--jobs: {e}"))?;
            }
            s if s.starts_with('-') => return Err(format!("unknown flag {s}\n{USAGE}")),
            s if dir.is_none() => dir = Some(PathBuf::from(s)),
            s => only.push(s.to_owned()),
        }
    }
    let dir = dir.ok_or_else(|| format!("conformance needs the test_cases directory\n{USAGE}"))?;
    conformance::run(&dir, jobs, &only)
}

fn bench_cmd(args: &[String]) -> Result<(), String> {
    let mut dir = PathBuf::from("testdata/bench");
    let mut min_time = Duration::from_secs(1);
    let mut only = String::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = PathBuf::from(value(&mut it, a)?),
            "--min-time-ms" => {
                let ms: u64 = value(&mut it, a)?
                    .parse()
                    .map_err(|e| format!("--min-time-ms: {e}"))?;
                min_time = Duration::from_millis(ms);
            }
            "--only" => only.clone_from(value(&mut it, a)?),
            s => return Err(format!("unknown argument {s}\n{USAGE}")),
        }
    }
    check_dir(&dir)?;
    bench::run(&dir, min_time, &only)
}

fn serve_cmd(args: &[String]) -> Result<(), String> {
    let mut dir = PathBuf::from("testdata/bench");
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = PathBuf::from(value(&mut it, a)?),
            s => return Err(format!("unknown argument {s}\n{USAGE}")),
        }
    }
    check_dir(&dir)?;
    bench::serve(&dir)
}

/// Refuses a bench directory without the workloads' files.
fn check_dir(dir: &Path) -> Result<(), String> {
    if dir.join("tiny.py").is_file() {
        return Ok(());
    }
    Err(format!(
        "{} has no tiny.py: run from the repository root or pass --dir",
        dir.display()
    ))
}
