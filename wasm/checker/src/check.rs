//! The operations behind `checker_call`.
//!
//! One `TypeChecker` lives in the instance between checks, so the typeshed
//! modules it has analysed stay warm. It is replaced by a fresh one whenever
//! a check would leave behind a file an earlier check wrote (another script
//! path, stubs or module stubs it does not rewrite): files persist in the
//! checker's in-memory file system, and one caller's stubs or code must
//! never be importable by the next.

use std::{cell::RefCell, sync::atomic::Ordering};

use abi::cbor::{DecodeError, Reader, Writer};
use monty_type_checking::{SourceFile, TypeCheckContext, TypeChecker};
use monty_types::{BASELINE_MEMORY, LIVE_MEMORY, ModuleStub, TypeCheckingConfig, TypeCheckingFormat};

pub const OP_INFO: u32 = 0;
pub const OP_CHECK: u32 = 1;
pub const OP_MEMORY: u32 = 2;

const STATUS_OK: u64 = 0;
const STATUS_DIAGNOSTICS: u64 = 1;
const STATUS_FAILURE: u64 = 2;

/// The monty release whose type checker this module carries (the crates are
/// pinned to it in Cargo.toml); the host compares it with the interpreter's.
const MONTY_VERSION: &str = "1.4.0";

/// The checker and the files it holds besides typeshed.
struct Warm {
    checker: TypeChecker,
    /// Paths (script, stubs) and module names written by earlier checks.
    written: Vec<String>,
}

thread_local! {
    static WARM: RefCell<Option<Warm>> = const { RefCell::new(None) };
}

/// One check request:
/// `[code, path, stubs|null, stubs_path, [[module, source], ...], prelude,
/// format, color, memory_budget|null]`.
struct Request<'a> {
    code: &'a str,
    path: &'a str,
    stubs: Option<&'a str>,
    stubs_path: &'a str,
    modules: Vec<ModuleStub>,
    prelude: &'a str,
    config: TypeCheckingConfig,
    budget: Option<usize>,
}

impl<'a> Request<'a> {
    fn read(r: &mut Reader<'a>) -> Result<Self, String> {
        let bad = |e: DecodeError| format!("invalid request: {e}");
        r.array_of(9).map_err(bad)?;
        let code = r.text().map_err(bad)?;
        let path = r.text().map_err(bad)?;
        let stubs = r.opt_text().map_err(bad)?;
        let stubs_path = r.text().map_err(bad)?;
        let n = r.array().map_err(bad)?;
        let mut modules = Vec::new();
        for _ in 0..n {
            r.array_of(2).map_err(bad)?;
            let name = r.text().map_err(bad)?;
            let source = r.text().map_err(bad)?;
            modules.push(
                ModuleStub::new(name, source).map_err(|e| format!("invalid request: module stub {name:?}: {e}"))?,
            );
        }
        let prelude = r.text().map_err(bad)?;
        let format =
            TypeCheckingFormat::from_name(r.text().map_err(bad)?).map_err(|e| format!("invalid request: {e}"))?;
        let color = r.bool().map_err(bad)?;
        let budget = r
            .opt_uint()
            .map_err(bad)?
            .map(|v| usize::try_from(v).unwrap_or(usize::MAX));
        Ok(Self {
            code,
            path,
            stubs,
            stubs_path,
            modules,
            prelude,
            config: TypeCheckingConfig { format, color },
            budget,
        })
    }

    /// Everything this check writes into the checker's file system.
    fn writes(&self) -> Vec<String> {
        let mut w = vec![self.path.to_owned()];
        if self.stubs.is_some() {
            w.push(self.stubs_path.to_owned());
        }
        w.extend(self.modules.iter().map(|m| format!("module:{}", m.module())));
        w
    }
}

/// Runs one operation and returns its CBOR response.
pub fn dispatch(op: u32, body: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    match op {
        OP_INFO => {
            w.array(2);
            w.uint(STATUS_OK);
            w.array(2);
            w.text(MONTY_VERSION);
            w.text(&TypeCheckingFormat::names());
        }
        OP_MEMORY => {
            w.array(2);
            w.uint(STATUS_OK);
            let live = LIVE_MEMORY.load(Ordering::Relaxed);
            let baseline = BASELINE_MEMORY.load(Ordering::Relaxed).min(live);
            w.uint((live - baseline) as u64);
        }
        OP_CHECK => {
            let mut r = Reader::new(body);
            let result = Request::read(&mut r).and_then(|req| check(&req, &mut w));
            if let Err(message) = result {
                w.buf.clear();
                w.array(2);
                w.uint(STATUS_FAILURE);
                w.text(&message);
            }
        }
        _ => {
            w.array(2);
            w.uint(STATUS_FAILURE);
            w.text(&format!("unknown operation {op}"));
        }
    }
    w.buf
}

/// Checks one snippet under the request's memory budget and writes
/// `[0, null]` when it is clean, `[1, [text, gitlab_json]]` when it has
/// diagnostics.
fn check(req: &Request<'_>, w: &mut Writer) -> Result<(), String> {
    // The allocator counts from the baseline; the budget covers this check
    // plus what the checker keeps from earlier ones.
    monty_alloc::set_hard_limit(req.budget).map_err(str::to_owned)?;
    let result = WARM.with_borrow_mut(|warm| {
        let writes = req.writes();
        let reuse = warm
            .as_ref()
            .is_some_and(|c| c.written.iter().all(|p| writes.contains(p)));
        if !reuse {
            *warm = None; // drop the old database before building the new one
            *warm = Some(Warm {
                checker: TypeChecker::default(),
                written: Vec::new(),
            });
        }
        let warm = warm.as_mut().expect("set above");
        warm.written = writes;
        run(&mut warm.checker, req)
    });
    monty_alloc::set_hard_limit(None).map_err(str::to_owned)?;
    match result? {
        None => {
            w.array(2);
            w.uint(STATUS_OK);
            w.null();
        }
        Some((text, gitlab)) => {
            w.array(2);
            w.uint(STATUS_DIAGNOSTICS);
            w.array(2);
            w.text(&text);
            w.text(&gitlab);
        }
    }
    Ok(())
}

/// The diagnostics rendered as asked and as GitLab JSON (the structured
/// form the host decodes: rule, severity, path and positions), or None.
///
/// ty's diagnostics borrow the checker and fix their format up front, so a
/// second format needs a second run; it finds every query cached.
fn run(checker: &mut TypeChecker, req: &Request<'_>) -> Result<Option<(String, String)>, String> {
    let stubs = req.stubs.map(|s| SourceFile::new(s, req.stubs_path));
    let context = TypeCheckContext {
        stubs: stubs.as_ref(),
        module_stubs: &req.modules,
        prelude: req.prelude,
    };
    let source = SourceFile::new(req.code, req.path);
    let Some(text) = checker.run_with(&source, &context, req.config)?.map(|d| d.to_string()) else {
        return Ok(None);
    };
    let structured = TypeCheckingConfig {
        format: TypeCheckingFormat::Gitlab,
        color: false,
    };
    let gitlab = if req.config == structured {
        text.clone()
    } else {
        checker
            .run_with(&source, &context, structured)?
            .map(|d| d.to_string())
            .unwrap_or_else(|| "[]".to_owned())
    };
    Ok(Some((text, gitlab)))
}
