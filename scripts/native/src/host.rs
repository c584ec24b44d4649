//! The host side of the test cases: what monty's own harness provides to
//! cases with `call-external = true`, reconstructed from how the cases use
//! it, and the answers every other case gets.
//!
//! The Go runner (`scripts/conformance/main.go`) implements exactly the same
//! semantics; change both together.
//!
//! External functions (call-external cases only):
//!
//! | name | behaviour |
//! |---|---|
//! | `add_ints(a, b)` | `a + b` for two ints |
//! | `concat_strings(a, b)` | `a + b` for two strs |
//! | `return_value(x)` | `x` |
//! | `get_list()` | `[1, 2, 3]` |
//! | `raise_error(type, msg)` | raises `type(msg)` |
//! | `make_point()` | host dataclass `Point(x=1, y=2)` |
//! | `make_mutable_point()` | host dataclass `MutablePoint(x=1, y=2)` |
//! | `make_user(name)` | host dataclass `User(name=name, active=True)` |
//! | `make_empty()` | host dataclass `Empty()` |
//! | `async_call(x)` | async: a future resolving to `x` |
//! | `async_fail(type, msg)` | async: a future failing with `type(msg)` |
//!
//! Host dataclass instances answer method calls from the host's own record
//! of the instance (sandbox-side attribute changes are local to the
//! sandbox): `Point`/`MutablePoint` have `sum()`, `add(dx, dy)`,
//! `scale(k)`, `describe(label)`; `User` has `greeting()`. Their lazy
//! attribute `dimensions` is 2 for both points; `MutablePoint.boom` raises
//! `KeyError('boom')`; anything else is undefined (`AttributeError`).
//!
//! Names: `CONST_INT` 42, `CONST_STR` 'hello', `CONST_FLOAT` 3.14,
//! `CONST_BOOL` True, `CONST_LIST` [1, 2, 3], `CONST_NONE` None, and every
//! external function name as a host function; any other name is undefined.
//!
//! OS calls of call-external cases: a writable in-memory tree under
//! `/virtual` (see [`VirtualFs`]), environment `VIRTUAL_HOME=/virtual/home`,
//! `VIRTUAL_USER=testuser`, `VIRTUAL_EMPTY=` (empty), `os.urandom`, and the
//! importable host module `tools` (the external functions plus a submodule
//! `tools.nested` with `VERSION = 7` and `return_value`).
//!
//! Every case: `time.sleep` sleeps; `asyncio.sleep` becomes a future that
//! resolves once its delay has passed; any other OS call gets the answer of
//! a host without a handler (`OsFunctionCall::on_no_handler`: an import is
//! not found, a path operation is `PermissionError`, anything else is
//! `RuntimeError`). mount-fs cases serve paths under `/mnt` from the
//! fixture directory (see `fixture`).

use std::{
    collections::{BTreeMap, HashMap},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use monty_types::{
    CallArgs, ExcType, ExtFunctionResult, MontyException, MontyObject, MontyUuid, NameLookupResult,
    ObjectRef, OsFunctionCall, dir_stat, file_stat, normalize_virtual_path,
};

/// Functions answered synchronously.
const SYNC_FUNCTIONS: &[&str] = &[
    "add_ints",
    "concat_strings",
    "return_value",
    "get_list",
    "raise_error",
    "make_point",
    "make_mutable_point",
    "make_user",
    "make_empty",
];

/// Functions answered with a future.
const ASYNC_FUNCTIONS: &[&str] = &["async_call", "async_fail"];

/// The `tools` module's functions.
const TOOLS_FUNCTIONS: &[&str] = &[
    "add_ints",
    "concat_strings",
    "return_value",
    "get_list",
    "raise_error",
    "async_call",
    "async_fail",
];

/// Deterministic ids: classes, modules, then instances counted per case.
const CLASS_ID_BASE: u128 = 0x100;
const TOOLS_ID: u128 = 0x7001;
const TOOLS_NESTED_ID: u128 = 0x7002;
const INSTANCE_ID_BASE: u128 = 0x1000;

/// The value of `CONST_FLOAT` the cases expect (not pi).
#[allow(clippy::approx_constant)]
const CONST_FLOAT: f64 = 3.14;

/// Modification time of every `/virtual` entry.
pub const VFS_MTIME: f64 = 1_700_000_000.0;

/// The host dataclasses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    Point,
    MutablePoint,
    User,
    Empty,
}

impl Class {
    fn name(self) -> &'static str {
        match self {
            Self::Point => "Point",
            Self::MutablePoint => "MutablePoint",
            Self::User => "User",
            Self::Empty => "Empty",
        }
    }

    fn id(self) -> u128 {
        CLASS_ID_BASE
            + match self {
                Self::Point => 0,
                Self::MutablePoint => 1,
                Self::User => 2,
                Self::Empty => 3,
            }
    }
}

/// The host's record of one instance it handed out.
#[derive(Debug, Clone)]
struct Instance {
    class: Class,
    fields: Vec<(&'static str, MontyObject)>,
}

/// What the host answers a function call with.
pub enum CallReply {
    /// A result now.
    Now(ExtFunctionResult),
    /// A future for the call, settled with this result when awaited.
    Future(ExtFunctionResult),
}

/// What the host answers an OS call with.
pub enum OsReply {
    /// A result now.
    Now(ExtFunctionResult),
    /// Sleep this long, then answer None (`time.sleep`).
    Sleep(Duration),
    /// A future that resolves to None after this delay (`asyncio.sleep`).
    AsyncSleep(Duration),
}

/// A pending future: ready at `ready_at` with `result`.
struct Pending {
    call_id: u32,
    ready_at: Instant,
    result: ExtFunctionResult,
}

/// The host of one case run.
pub struct Host {
    external: bool,
    instances: HashMap<MontyUuid, Instance>,
    next_instance: u128,
    vfs: VirtualFs,
    mounts: Option<monty_fs::MountTable>,
    pending: Vec<Pending>,
    rng: u64,
}

impl Host {
    /// A host for a case; `external` for call-external cases, `mounts` for
    /// mount-fs cases.
    pub fn new(external: bool, mounts: Option<monty_fs::MountTable>) -> Self {
        let seed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
            | 1;
        Self {
            external,
            instances: HashMap::new(),
            next_instance: INSTANCE_ID_BASE,
            vfs: VirtualFs::new(),
            mounts,
            pending: Vec::new(),
            rng: seed,
        }
    }

    // ---- function calls --------------------------------------------------

    /// Answers a call of `name` (a method of the host object `object_id` when set).
    pub fn call(&mut self, name: &str, args: &CallArgs, object_id: Option<MontyUuid>) -> CallReply {
        if let Some(id) = object_id {
            return CallReply::Now(self.method(id, name, args));
        }
        if !self.external {
            return CallReply::Now(ExtFunctionResult::NotFound(name.to_owned()));
        }
        match name {
            "async_call" => CallReply::Future(match positional::<1>(name, args) {
                Ok([x]) => ExtFunctionResult::Return(x.to_owned()),
                Err(e) => e.into(),
            }),
            "async_fail" => CallReply::Future(raise_from_args(name, args)),
            _ => CallReply::Now(self.sync_function(name, args)),
        }
    }

    fn sync_function(&mut self, name: &str, args: &CallArgs) -> ExtFunctionResult {
        let result = match name {
            "add_ints" => positional::<2>(name, args).and_then(|[a, b]| {
                match (
                    a.as_int(),
                    b.as_int(),
                    a.as_bool().is_none() && b.as_bool().is_none(),
                ) {
                    (Some(a), Some(b), true) => {
                        a.checked_add(b).map(MontyObject::int).ok_or_else(|| {
                            exc(
                                ExcType::OverflowError,
                                "add_ints: result does not fit in 64 bits",
                            )
                        })
                    }
                    _ => Err(exc(ExcType::TypeError, "add_ints expects two ints")),
                }
            }),
            "concat_strings" => {
                positional::<2>(name, args).and_then(|[a, b]| match (a.as_str(), b.as_str()) {
                    (Some(a), Some(b)) => Ok(MontyObject::string(format!("{a}{b}"))),
                    _ => Err(exc(ExcType::TypeError, "concat_strings expects two strs")),
                })
            }
            "return_value" => positional::<1>(name, args).map(|[x]| x.to_owned()),
            "get_list" => positional::<0>(name, args).map(|[]| list_123()),
            "raise_error" => return raise_from_args(name, args),
            "make_point" => {
                positional::<0>(name, args).map(|[]| self.make(Class::Point, point_fields(1, 2)))
            }
            "make_mutable_point" => positional::<0>(name, args)
                .map(|[]| self.make(Class::MutablePoint, point_fields(1, 2))),
            "make_user" => positional::<1>(name, args).and_then(|[n]| match n.as_str() {
                Some(n) => Ok(self.make(
                    Class::User,
                    vec![
                        ("name", MontyObject::string(n.to_owned())),
                        ("active", MontyObject::bool(true)),
                    ],
                )),
                None => Err(exc(ExcType::TypeError, "make_user expects a str")),
            }),
            "make_empty" => positional::<0>(name, args).map(|[]| self.make(Class::Empty, vec![])),
            _ => return ExtFunctionResult::NotFound(name.to_owned()),
        };
        result.into_ext()
    }

    /// Builds a new host instance and records it.
    fn make(&mut self, class: Class, fields: Vec<(&'static str, MontyObject)>) -> MontyObject {
        let id = MontyUuid::from_u128(self.next_instance);
        self.next_instance += 1;
        let value = MontyObject::class_instance(
            MontyObject::class_type(
                class.name(),
                MontyUuid::from_u128(class.id()),
                true,
                true,
                [],
            ),
            id,
            fields
                .iter()
                .map(|(k, v)| (MontyObject::string((*k).to_owned()), v.clone())),
        );
        self.instances.insert(id, Instance { class, fields });
        value
    }

    /// A method call on a host instance.
    fn method(&mut self, id: MontyUuid, name: &str, args: &CallArgs) -> ExtFunctionResult {
        let Some(inst) = self.instances.get(&id).cloned() else {
            return exc(
                ExcType::RuntimeError,
                &format!("unknown host object for method {name}"),
            )
            .into();
        };
        let field = |n: &str| {
            inst.fields
                .iter()
                .find(|(k, _)| *k == n)
                .and_then(|(_, v)| v.as_ref().as_int())
        };
        let point = matches!(inst.class, Class::Point | Class::MutablePoint);
        let result = match (name, point) {
            ("sum", true) => positional::<0>(name, args)
                .map(|[]| MontyObject::int(field("x").unwrap_or(0) + field("y").unwrap_or(0))),
            ("add", true) => {
                positional::<2>(name, args).and_then(|[dx, dy]| match (dx.as_int(), dy.as_int()) {
                    (Some(dx), Some(dy)) => Ok(self.make(
                        inst.class,
                        point_fields(field("x").unwrap_or(0) + dx, field("y").unwrap_or(0) + dy),
                    )),
                    _ => Err(exc(ExcType::TypeError, "add expects two ints")),
                })
            }
            ("scale", true) => positional::<1>(name, args).and_then(|[k]| match k.as_int() {
                Some(k) => Ok(self.make(
                    inst.class,
                    point_fields(field("x").unwrap_or(0) * k, field("y").unwrap_or(0) * k),
                )),
                None => Err(exc(ExcType::TypeError, "scale expects an int")),
            }),
            ("describe", true) => {
                let label = args
                    .arg(0)
                    .or_else(|| args.kwarg("label"))
                    .and_then(|l| l.as_str());
                match label {
                    Some(label) => Ok(MontyObject::string(format!(
                        "{label}({}, {})",
                        field("x").unwrap_or(0),
                        field("y").unwrap_or(0)
                    ))),
                    None => Err(exc(ExcType::TypeError, "describe expects a str label")),
                }
            }
            ("greeting", false) if inst.class == Class::User => {
                positional::<0>(name, args).map(|[]| {
                    let who = inst
                        .fields
                        .iter()
                        .find(|(k, _)| *k == "name")
                        .and_then(|(_, v)| v.as_ref().as_str().map(str::to_owned))
                        .unwrap_or_default();
                    MontyObject::string(format!("Hello, {who}!"))
                })
            }
            // Calling the instance itself: these classes define no __call__.
            ("__call__", _) => Err(exc(
                ExcType::TypeError,
                &format!("'{}' object is not callable", inst.class.name()),
            )),
            _ => Err(no_attribute(inst.class, name)),
        };
        result.into_ext()
    }

    // ---- name lookups ------------------------------------------------------

    /// Answers a lookup of `name` (an attribute of the host object `object_id` when set).
    pub fn lookup(&self, name: &str, object_id: Option<MontyUuid>) -> NameLookupResult {
        if let Some(id) = object_id {
            let Some(inst) = self.instances.get(&id) else {
                return NameLookupResult::Undefined;
            };
            return match (inst.class, name) {
                (Class::Point | Class::MutablePoint, "dimensions") => {
                    NameLookupResult::Value(MontyObject::int(2))
                }
                (Class::MutablePoint, "boom") => {
                    NameLookupResult::Error(exc(ExcType::KeyError, "boom"))
                }
                _ => NameLookupResult::Undefined,
            };
        }
        if !self.external {
            return NameLookupResult::Undefined;
        }
        match name {
            "CONST_INT" => MontyObject::int(42).into(),
            "CONST_STR" => MontyObject::string("hello".to_owned()).into(),
            "CONST_FLOAT" => MontyObject::float(CONST_FLOAT).into(),
            "CONST_BOOL" => MontyObject::bool(true).into(),
            "CONST_LIST" => list_123().into(),
            "CONST_NONE" => MontyObject::none().into(),
            _ if SYNC_FUNCTIONS.contains(&name) || ASYNC_FUNCTIONS.contains(&name) => {
                MontyObject::function(name.to_owned(), None).into()
            }
            _ => NameLookupResult::Undefined,
        }
    }

    // ---- OS calls ------------------------------------------------------------

    /// Answers an OS call.
    pub fn os(&mut self, call: OsFunctionCall) -> OsReply {
        match call {
            OsFunctionCall::Sleep(d) | OsFunctionCall::SystemSleep(d) => return OsReply::Sleep(d),
            OsFunctionCall::AsyncSleep(d) | OsFunctionCall::AsyncSystemSleep(d) => {
                return OsReply::AsyncSleep(d);
            }
            _ => {}
        }
        let call = match self.mounts.as_mut() {
            Some(mounts) => match mounts.handle_os_call(call) {
                monty_fs::MountCallOutcome::Handled(Ok(v)) => {
                    return OsReply::Now(ExtFunctionResult::Return(v));
                }
                monty_fs::MountCallOutcome::Handled(Err(e)) => {
                    return OsReply::Now(ExtFunctionResult::Error(e.into_exception()));
                }
                monty_fs::MountCallOutcome::NotHandled(call) => call,
            },
            None => call,
        };
        if self.external
            && let Some(result) = self.external_os(&call)
        {
            return OsReply::Now(result);
        }
        OsReply::Now(no_handler(&call))
    }

    fn external_os(&mut self, call: &OsFunctionCall) -> Option<ExtFunctionResult> {
        Some(match call {
            OsFunctionCall::Getenv(a) => match env_value(&a.key) {
                Some(v) => MontyObject::string(v.to_owned()).into(),
                None => a.default.clone().into(),
            },
            OsFunctionCall::GetEnviron => MontyObject::dict(ENV.iter().map(|(k, v)| {
                (
                    MontyObject::string((*k).to_owned()),
                    MontyObject::string((*v).to_owned()),
                )
            }))
            .into(),
            OsFunctionCall::Urandom(a) => {
                let n = usize::try_from(a.size).unwrap_or(usize::MAX);
                if n > 1 << 20 {
                    return Some(exc(ExcType::ValueError, "os.urandom: size too large").into());
                }
                MontyObject::bytes(self.random_bytes(n)).into()
            }
            OsFunctionCall::Import(name) => match name.as_str() {
                "tools" => tools_module().into(),
                _ => ExtFunctionResult::NotFound(name.clone()),
            },
            other => return self.vfs.handle(other),
        })
    }

    fn random_bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n)
            .map(|_| {
                // splitmix64
                self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
                let mut z = self.rng;
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                (z ^ (z >> 31)) as u8
            })
            .collect()
    }

    // ---- futures ----------------------------------------------------------------

    /// Records a future for `call_id`.
    pub fn add_pending(&mut self, call_id: u32, delay: Duration, result: ExtFunctionResult) {
        self.pending.push(Pending {
            call_id,
            ready_at: Instant::now() + delay,
            result,
        });
    }

    /// The results for some of `wanted`: every one already due; if none is,
    /// waits for the earliest. `None` when the host holds none of them.
    pub fn resolve(&mut self, wanted: &[u32]) -> Option<Vec<(u32, ExtFunctionResult)>> {
        let earliest = self
            .pending
            .iter()
            .filter(|p| wanted.contains(&p.call_id))
            .map(|p| p.ready_at)
            .min()?;
        let now = Instant::now();
        if earliest > now {
            std::thread::sleep(earliest - now);
        }
        let now = Instant::now();
        let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut self.pending)
            .into_iter()
            .partition(|p| wanted.contains(&p.call_id) && p.ready_at <= now);
        self.pending = rest;
        Some(due.into_iter().map(|p| (p.call_id, p.result)).collect())
    }
}

/// The answer of a host that has no handler for `call`.
pub fn no_handler(call: &OsFunctionCall) -> ExtFunctionResult {
    match call {
        OsFunctionCall::Import(name) => ExtFunctionResult::NotFound(name.clone()),
        _ => ExtFunctionResult::Error(call.on_no_handler()),
    }
}

const ENV: &[(&str, &str)] = &[
    ("VIRTUAL_EMPTY", ""),
    ("VIRTUAL_HOME", "/virtual/home"),
    ("VIRTUAL_USER", "testuser"),
];

fn env_value(key: &str) -> Option<&'static str> {
    ENV.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

fn list_123() -> MontyObject {
    MontyObject::list([
        MontyObject::int(1),
        MontyObject::int(2),
        MontyObject::int(3),
    ])
}

fn point_fields(x: i64, y: i64) -> Vec<(&'static str, MontyObject)> {
    vec![("x", MontyObject::int(x)), ("y", MontyObject::int(y))]
}

fn tools_module() -> MontyObject {
    let nested = MontyObject::module(
        "tools.nested",
        MontyUuid::from_u128(TOOLS_NESTED_ID),
        [
            (
                MontyObject::string("VERSION".to_owned()),
                MontyObject::int(7),
            ),
            (
                MontyObject::string("return_value".to_owned()),
                MontyObject::function("return_value".to_owned(), None),
            ),
        ],
    );
    let mut attrs: Vec<(MontyObject, MontyObject)> = TOOLS_FUNCTIONS
        .iter()
        .map(|f| {
            (
                MontyObject::string((*f).to_owned()),
                MontyObject::function((*f).to_owned(), None),
            )
        })
        .collect();
    attrs.push((MontyObject::string("nested".to_owned()), nested));
    MontyObject::module("tools", MontyUuid::from_u128(TOOLS_ID), attrs)
}

fn exc(t: ExcType, msg: &str) -> MontyException {
    MontyException::new(t, Some(msg.to_owned()))
}

fn no_attribute(class: Class, name: &str) -> MontyException {
    exc(
        ExcType::AttributeError,
        &format!("'{}' object has no attribute '{name}'", class.name()),
    )
}

/// Exactly `N` positional arguments and no keywords.
fn positional<'a, const N: usize>(
    name: &str,
    args: &'a CallArgs,
) -> Result<[ObjectRef<'a>; N], MontyException> {
    let given: Vec<ObjectRef<'a>> = args.args().collect();
    if args.kwargs().len() != 0 || given.len() != N {
        return Err(exc(
            ExcType::TypeError,
            &format!(
                "{name}() takes {N} positional arguments ({} given)",
                given.len()
            ),
        ));
    }
    Ok(given.try_into().unwrap_or_else(|_| unreachable!()))
}

/// `raise_error(type, msg)` / `async_fail(type, msg)`: the exception to raise.
fn raise_from_args(name: &str, args: &CallArgs) -> ExtFunctionResult {
    match positional::<2>(name, args) {
        Ok([t, m]) => match (
            t.as_str().and_then(|t| t.parse::<ExcType>().ok()),
            m.as_str(),
        ) {
            (Some(t), Some(m)) => exc(t, m).into(),
            _ => exc(
                ExcType::TypeError,
                &format!("{name} expects an exception type name and a message"),
            )
            .into(),
        },
        Err(e) => e.into(),
    }
}

trait IntoExt {
    fn into_ext(self) -> ExtFunctionResult;
}

impl IntoExt for Result<MontyObject, MontyException> {
    fn into_ext(self) -> ExtFunctionResult {
        match self {
            Ok(v) => ExtFunctionResult::Return(v),
            Err(e) => ExtFunctionResult::Error(e),
        }
    }
}

// ---- the /virtual tree --------------------------------------------------------

/// An entry of the virtual tree.
#[derive(Debug, Clone)]
enum Entry {
    Dir,
    File { data: Vec<u8>, mode: i64 },
}

/// The in-memory tree call-external cases see under `/virtual`:
///
/// ```text
/// /virtual/file.txt            "hello world\n"   0o644
/// /virtual/data.bin            b"\x00\x01\x02\x03"
/// /virtual/empty.txt           ""
/// /virtual/readonly.txt        "readonly"        0o444
/// /virtual/subdir/nested.txt   "nested content"
/// /virtual/subdir/deep/file.txt "deep"
/// ```
///
/// Directories have mode 0o755; every mtime is [`VFS_MTIME`]. Writes,
/// `mkdir`, `unlink`, `rmdir` and `rename` change the tree for the rest of
/// the run. Paths outside the tree do not exist. Errors use CPython's
/// wording with the path as the call gave it (normalised).
struct VirtualFs {
    tree: BTreeMap<String, Entry>,
}

impl VirtualFs {
    fn new() -> Self {
        let file = |data: &[u8], mode| Entry::File {
            data: data.to_vec(),
            mode,
        };
        let tree = BTreeMap::from([
            ("/virtual".to_owned(), Entry::Dir),
            (
                "/virtual/file.txt".to_owned(),
                file(b"hello world\n", 0o644),
            ),
            (
                "/virtual/data.bin".to_owned(),
                file(b"\x00\x01\x02\x03", 0o644),
            ),
            ("/virtual/empty.txt".to_owned(), file(b"", 0o644)),
            ("/virtual/readonly.txt".to_owned(), file(b"readonly", 0o444)),
            ("/virtual/subdir".to_owned(), Entry::Dir),
            (
                "/virtual/subdir/nested.txt".to_owned(),
                file(b"nested content", 0o644),
            ),
            ("/virtual/subdir/deep".to_owned(), Entry::Dir),
            (
                "/virtual/subdir/deep/file.txt".to_owned(),
                file(b"deep", 0o644),
            ),
        ]);
        Self { tree }
    }

    fn children(&self, dir: &str) -> Vec<String> {
        let prefix = format!("{dir}/");
        self.tree
            .keys()
            .filter(|k| k.starts_with(&prefix) && !k[prefix.len()..].contains('/'))
            .cloned()
            .collect()
    }

    fn parent_is_dir(&self, path: &str) -> Result<(), MontyException> {
        let parent = parent(path);
        match self.tree.get(parent) {
            Some(Entry::Dir) => Ok(()),
            Some(Entry::File { .. }) => Err(os_error(
                ExcType::NotADirectoryError,
                20,
                "Not a directory",
                path,
            )),
            None => Err(not_found(path)),
        }
    }

    fn write(&mut self, path: &str, data: &[u8], append: bool) -> Result<(), MontyException> {
        self.parent_is_dir(path)?;
        match self.tree.get_mut(path) {
            Some(Entry::Dir) => Err(os_error(
                ExcType::IsADirectoryError,
                21,
                "Is a directory",
                path,
            )),
            Some(Entry::File { data: d, .. }) => {
                if !append {
                    d.clear();
                }
                d.extend_from_slice(data);
                Ok(())
            }
            None => {
                self.tree.insert(
                    path.to_owned(),
                    Entry::File {
                        data: data.to_vec(),
                        mode: 0o644,
                    },
                );
                Ok(())
            }
        }
    }

    /// Serves the path calls; `None` for calls it does not implement.
    fn handle(&mut self, call: &OsFunctionCall) -> Option<ExtFunctionResult> {
        let path = normalize_virtual_path(call.fs_primary_path()?).into_owned();
        let p = path.as_str();
        let entry = self.tree.get(p).cloned();
        let r: Result<MontyObject, MontyException> = match call {
            OsFunctionCall::Exists(_) => Ok(MontyObject::bool(entry.is_some())),
            OsFunctionCall::IsFile(_) => {
                Ok(MontyObject::bool(matches!(entry, Some(Entry::File { .. }))))
            }
            OsFunctionCall::IsDir(_) => Ok(MontyObject::bool(matches!(entry, Some(Entry::Dir)))),
            OsFunctionCall::IsSymlink(_) => Ok(MontyObject::bool(false)),
            OsFunctionCall::ReadText(_) => match entry {
                Some(Entry::File { data, .. }) => String::from_utf8(data)
                    .map(MontyObject::string)
                    .map_err(|_| {
                        exc(
                            ExcType::UnicodeDecodeError,
                            "'utf-8' codec can't decode bytes",
                        )
                    }),
                Some(Entry::Dir) => Err(os_error(
                    ExcType::IsADirectoryError,
                    21,
                    "Is a directory",
                    p,
                )),
                None => Err(not_found(p)),
            },
            OsFunctionCall::ReadBytes(_) => match entry {
                Some(Entry::File { data, .. }) => Ok(MontyObject::bytes(data)),
                Some(Entry::Dir) => Err(os_error(
                    ExcType::IsADirectoryError,
                    21,
                    "Is a directory",
                    p,
                )),
                None => Err(not_found(p)),
            },
            OsFunctionCall::Stat(_) => match entry {
                Some(Entry::File { data, mode }) => {
                    Ok(file_stat(mode, data.len() as i64, VFS_MTIME))
                }
                Some(Entry::Dir) => Ok(dir_stat(0o755, VFS_MTIME)),
                None => Err(not_found(p)),
            },
            OsFunctionCall::Iterdir(_) => match entry {
                Some(Entry::Dir) => Ok(MontyObject::list(
                    self.children(p).into_iter().map(MontyObject::string),
                )),
                Some(Entry::File { .. }) => Err(os_error(
                    ExcType::NotADirectoryError,
                    20,
                    "Not a directory",
                    p,
                )),
                None => Err(not_found(p)),
            },
            OsFunctionCall::Resolve(_) | OsFunctionCall::Absolute(_) => {
                Ok(MontyObject::path(path.clone()))
            }
            OsFunctionCall::WriteText(a) => self
                .write(p, a.data.as_bytes(), false)
                .map(|()| MontyObject::int(a.data.chars().count() as i64)),
            OsFunctionCall::AppendText(a) => self
                .write(p, a.data.as_bytes(), true)
                .map(|()| MontyObject::int(a.data.chars().count() as i64)),
            OsFunctionCall::WriteBytes(a) => self
                .write(p, &a.data, false)
                .map(|()| MontyObject::int(a.data.len() as i64)),
            OsFunctionCall::AppendBytes(a) => self
                .write(p, &a.data, true)
                .map(|()| MontyObject::int(a.data.len() as i64)),
            OsFunctionCall::Mkdir(a) => self
                .mkdir(p, a.parents, a.exist_ok)
                .map(|()| MontyObject::none()),
            OsFunctionCall::Unlink(_) => match entry {
                Some(Entry::File { .. }) => {
                    self.tree.remove(p);
                    Ok(MontyObject::none())
                }
                Some(Entry::Dir) => Err(os_error(
                    ExcType::IsADirectoryError,
                    21,
                    "Is a directory",
                    p,
                )),
                None => Err(not_found(p)),
            },
            OsFunctionCall::Rmdir(_) => match entry {
                Some(Entry::Dir) if !self.children(p).is_empty() => {
                    Err(os_error(ExcType::OSError, 39, "Directory not empty", p))
                }
                Some(Entry::Dir) => {
                    self.tree.remove(p);
                    Ok(MontyObject::none())
                }
                Some(Entry::File { .. }) => Err(os_error(
                    ExcType::NotADirectoryError,
                    20,
                    "Not a directory",
                    p,
                )),
                None => Err(not_found(p)),
            },
            OsFunctionCall::Rename(a) => {
                let dst = normalize_virtual_path(&a.dst).into_owned();
                // None, as monty-fs answers: Path.rename/replace build their
                // own result, os.rename/replace return the answer as is.
                self.rename(p, &dst).map(|()| MontyObject::none())
            }
            _ => return None,
        };
        Some(r.into_ext())
    }

    fn mkdir(&mut self, p: &str, parents: bool, exist_ok: bool) -> Result<(), MontyException> {
        match self.tree.get(p) {
            Some(Entry::Dir) if exist_ok => return Ok(()),
            Some(_) => return Err(os_error(ExcType::FileExistsError, 17, "File exists", p)),
            None => {}
        }
        if parents {
            let mut chain = vec![p.to_owned()];
            let mut cur = parent(p);
            while !cur.is_empty() && !self.tree.contains_key(cur) {
                chain.push(cur.to_owned());
                cur = parent(cur);
            }
            if cur.is_empty() {
                return Err(not_found(p));
            }
            if matches!(self.tree.get(cur), Some(Entry::File { .. })) {
                return Err(os_error(
                    ExcType::NotADirectoryError,
                    20,
                    "Not a directory",
                    p,
                ));
            }
            for d in chain.into_iter().rev() {
                self.tree.insert(d, Entry::Dir);
            }
            return Ok(());
        }
        self.parent_is_dir(p)?;
        self.tree.insert(p.to_owned(), Entry::Dir);
        Ok(())
    }

    fn rename(&mut self, src: &str, dst: &str) -> Result<(), MontyException> {
        if !self.tree.contains_key(src) {
            return Err(not_found(src));
        }
        self.parent_is_dir(dst)?;
        let prefix = format!("{src}/");
        let moved: Vec<String> = self
            .tree
            .keys()
            .filter(|k| *k == src || k.starts_with(&prefix))
            .cloned()
            .collect();
        for k in moved {
            if let Some(e) = self.tree.remove(&k) {
                self.tree.insert(format!("{dst}{}", &k[src.len()..]), e);
            }
        }
        Ok(())
    }
}

/// The parent of an absolute normalised path; "" for "/".
fn parent(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) if path.len() > 1 => "/",
        Some(i) if i > 0 => &path[..i],
        _ => "",
    }
}

fn not_found(path: &str) -> MontyException {
    os_error(
        ExcType::FileNotFoundError,
        2,
        "No such file or directory",
        path,
    )
}

fn os_error(t: ExcType, errno: u32, what: &str, path: &str) -> MontyException {
    exc(t, &format!("[Errno {errno}] {what}: '{path}'"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parents() {
        assert_eq!(parent("/virtual/a"), "/virtual");
        assert_eq!(parent("/virtual"), "/");
        assert_eq!(parent("/"), "");
    }
}
