//! Reading monty's `test_cases/*.py` files: the `# /// monty` header and the
//! expectation at the end of the file.
//!
//! A case is a Python file. It may start with a TOML-like header block
//!
//! ```text
//! # /// monty
//! # call-external = true
//! # ///
//! ```
//!
//! and may end with one expectation:
//!
//! * `# Raise=ExcType('message')`: the run (or the compile) raises, and the
//!   exception's repr is exactly this;
//! * `# Return=repr`, `# Return.str=text`, `# Return.type=name`: the value of
//!   the final expression, compared by repr, str or type name;
//! * `# ref-counts={...}`: reference counts, which only a test build of monty
//!   can report; we check that the run succeeds;
//! * a closing `"""\nTRACEBACK:\n...\n"""` string: the run raises and the
//!   formatted traceback is exactly this text.
//!
//! Without an expectation the case must run without raising (its asserts do
//! the checking). The expectation line or block is not part of the code that
//! runs. The Go runner (`scripts/conformance/main.go`) parses cases the same
//! way.

use std::fmt::Write as _;

/// What a case expects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The repr of the exception raised at compile or run time.
    Raise(String),
    /// The repr of the result.
    Return(String),
    /// The str of the result.
    ReturnStr(String),
    /// The type name of the result.
    ReturnType(String),
    /// Reference counts, checked only by monty's own test build: here the
    /// run must simply succeed.
    RefCounts(String),
    /// The full formatted traceback.
    Traceback(String),
    /// The run must not raise.
    NoException,
}

/// The header keys of a case.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The case calls the harness's external functions, names and OS calls.
    pub call_external: bool,
    /// The case awaits at top level (only matters to CPython).
    pub run_async: bool,
    /// The case needs the fixture directory mounted at `/mnt` (input `root`).
    pub mount_fs: bool,
    /// The case is expected to fail on monty (strict: passing is a failure).
    pub xfail_monty: bool,
    /// The IANA zone the sandbox runs in.
    pub timezone: Option<String>,
    /// The garbage collector's allocation interval.
    pub gc_interval: Option<usize>,
    /// Header keys this harness does not know: the case is skipped.
    pub unknown: Vec<String>,
}

/// One parsed case.
#[derive(Debug, Clone)]
pub struct Case {
    /// File name without `.py`, used in reports.
    pub name: String,
    /// File name, used as the script name (tracebacks show it).
    pub file_name: String,
    /// The code to run.
    pub code: String,
    pub expect: Expect,
    pub config: Config,
}

/// Builds an expectation from the text after its prefix.
type MakeExpect = fn(String) -> Expect;

const TRACEBACK_MARKER: &str = "\"\"\"\nTRACEBACK:\n";

/// Parses a case file.
pub fn parse(file_name: &str, content: &str) -> Case {
    let name = file_name
        .strip_suffix(".py")
        .unwrap_or(file_name)
        .to_owned();
    let config = parse_header(content);
    let (code, expect) = parse_expectation(content);
    Case {
        name,
        file_name: file_name.to_owned(),
        code,
        expect,
        config,
    }
}

fn parse_expectation(content: &str) -> (String, Expect) {
    if let Some(pos) = content.find(TRACEBACK_MARKER) {
        let after = &content[pos + TRACEBACK_MARKER.len()..];
        if let Some(end) = after.find("\n\"\"\"") {
            let code = content[..pos]
                .lines()
                .collect::<Vec<_>>()
                .join("\n")
                .trim_end()
                .to_owned();
            return (code, Expect::Traceback(after[..end].to_owned()));
        }
    }
    let lines: Vec<&str> = content.lines().collect();
    let Some(last) = lines.last() else {
        return (String::new(), Expect::NoException);
    };
    let prefixes: [(&str, MakeExpect); 5] = [
        ("# ref-counts=", Expect::RefCounts),
        ("# Return.str=", Expect::ReturnStr),
        ("# Return.type=", Expect::ReturnType),
        ("# Return=", Expect::Return),
        ("# Raise=", Expect::Raise),
    ];
    for (prefix, make) in prefixes {
        if let Some(expected) = last.strip_prefix(prefix) {
            return (
                lines[..lines.len() - 1].join("\n"),
                make(expected.to_owned()),
            );
        }
    }
    (lines.join("\n"), Expect::NoException)
}

/// Reads the `# /// monty` ... `# ///` block.
fn parse_header(content: &str) -> Config {
    let mut config = Config::default();
    let mut lines = content.lines();
    if !lines.any(|l| l.trim_end() == "# /// monty") {
        return config;
    }
    for line in lines {
        let line = line.trim_end();
        if line == "# ///" {
            break;
        }
        let Some(body) = line.strip_prefix('#') else {
            break;
        };
        let body = body.trim();
        if body.is_empty() || body.starts_with('#') {
            continue;
        }
        let Some((key, value)) = body.split_once('=') else {
            config.unknown.push(body.to_owned());
            continue;
        };
        let key = key.trim();
        let value = strip_comment(value.trim());
        match key {
            "call-external" => config.call_external = value == "true",
            "run-async" => config.run_async = value == "true",
            "mount-fs" => config.mount_fs = value == "true",
            "xfail" => {
                config.xfail_monty = value.contains("'monty'") || value.contains("\"monty\"");
            }
            "timezone" => config.timezone = Some(value.trim_matches(['\'', '"']).to_owned()),
            "gc-interval" => config.gc_interval = value.parse().ok(),
            // Only the CPython side of monty's harness reads these.
            "skip-cpython-windows" | "cpython-main-module" => {}
            other => config.unknown.push(other.to_owned()),
        }
    }
    config
}

/// Drops a trailing `# comment` outside quotes.
fn strip_comment(value: &str) -> &str {
    let mut quote = None;
    for (i, c) in value.char_indices() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), c) if c == q => quote = None,
            (None, '#') => return value[..i].trim_end(),
            _ => {}
        }
    }
    value
}

/// Why a case needs a test build of monty (the `test-hooks` feature adds
/// the `gc` module and `sys.setrecursionlimit`), or `None`. Neither the wasm
/// module nor this harness enables that feature, so such cases are skipped.
pub fn needs_test_hooks(code: &str) -> Option<&'static str> {
    if code.contains("setrecursionlimit(") {
        return Some("sys.setrecursionlimit");
    }
    let imports_gc = code.lines().any(|l| {
        let l = l.trim_start();
        l == "import gc"
            || l.starts_with("import gc ")
            || l.starts_with("import gc,")
            || l.starts_with("from gc ")
    });
    imports_gc.then_some("the gc module")
}

/// Describes a mismatch for the report: expected and got, shortened.
pub fn mismatch(what: &str, expected: &str, got: &str) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{what}: expected {:?}, got {:?}",
        shorten(expected),
        shorten(got)
    );
    s
}

/// Cuts long text for one-line reports.
pub fn shorten(s: &str) -> String {
    const MAX: usize = 600;
    if s.len() <= MAX {
        return s.to_owned();
    }
    let mut end = MAX;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_raise() {
        let c = parse(
            "x.py",
            "# /// monty\n# call-external = true\n# xfail = ['monty']  # why\n# ///\n1/0\n# Raise=ZeroDivisionError('division by zero')\n",
        );
        assert!(c.config.call_external);
        assert!(c.config.xfail_monty);
        assert_eq!(
            c.expect,
            Expect::Raise("ZeroDivisionError('division by zero')".into())
        );
        assert!(c.code.ends_with("1/0"));
    }

    #[test]
    fn traceback() {
        let c = parse(
            "t.py",
            "foo()\n\"\"\"\nTRACEBACK:\nTraceback...\nNameError: x\n\"\"\"\n",
        );
        assert_eq!(
            c.expect,
            Expect::Traceback("Traceback...\nNameError: x".into())
        );
        assert_eq!(c.code, "foo()");
    }
}
