//! Python values <-> CBOR, per `docs/values.md`.
//!
//! Encoding walks a value's node graph from its root; decoding pushes nodes
//! into a fresh graph in post-order (children first), as the graph expects.

use std::cell::Cell;

use abi::cbor::{ARRAY, BYTES, DecodeError, NINT, Reader, SIMPLE, TAG, TEXT, UINT, Writer};
use monty_types::{
    BuiltinsFunctions, CallArgs, ExcType, FileMode, MontyDate, MontyDateTime, MontyFileHandle, MontyObject, MontyTime,
    MontyTimeDelta, MontyTimeZone, MontyType, MontyUuid, NamedValues,
    unstable::{self, ClassTypeNode, MontyGraph, MontyNode, NodeId},
};
use num_bigint::{BigInt, BigUint, Sign};

pub const T_TUPLE: u64 = 40000;
pub const T_DICT: u64 = 40001;
pub const T_SET: u64 = 40002;
pub const T_FROZENSET: u64 = 40003;
pub const T_NAMEDTUPLE: u64 = 40004;
pub const T_INSTANCE: u64 = 40005;
pub const T_CLASS: u64 = 40006;
pub const T_EXCEPTION: u64 = 40007;
pub const T_PATH: u64 = 40008;
pub const T_DATE: u64 = 40009;
pub const T_DATETIME: u64 = 40010;
pub const T_TIME: u64 = 40011;
pub const T_TIMEDELTA: u64 = 40012;
pub const T_TIMEZONE: u64 = 40013;
pub const T_FUNCTION: u64 = 40014;
pub const T_REPR: u64 = 40015;
pub const T_CYCLE: u64 = 40016;
pub const T_ELLIPSIS: u64 = 40017;
pub const T_NOTIMPLEMENTED: u64 = 40018;
pub const T_COMPLEX: u64 = 40019;
pub const T_DECIMAL: u64 = 40020;
pub const T_TYPE: u64 = 40021;
pub const T_BUILTIN: u64 = 40022;
pub const T_MODULE: u64 = 40023;
pub const T_FILE: u64 = 40024;

/// Deepest nesting either direction accepts.
pub const MAX_DEPTH: usize = 1000;
/// Most nodes one encoded value may expand to (shared nodes are written once
/// per reference, so a small graph can describe a huge tree).
const MAX_ENCODED_NODES: usize = 50_000_000;

/// Why a value could not be encoded or decoded.
pub type ValueError = String;

/// Starts the message of an encoding refused by [`set_size_cap`]'s cap; the
/// host recognises it.
pub const TOO_LARGE: &str = "value too large to transfer";

thread_local! {
    /// Most bytes one encoded value (a result, or a call's arguments) may take.
    static SIZE_CAP: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Sets the most bytes an encoded value may take (`None`: no cap).
pub fn set_size_cap(cap: Option<usize>) {
    SIZE_CAP.set(cap.unwrap_or(usize::MAX));
}

/// Fails when `extra` more bytes would take `w` past the size cap, before
/// anything is written: a single huge string is refused without copying it.
fn check_room(w: &Writer, extra: usize) -> Result<(), ValueError> {
    let cap = SIZE_CAP.get();
    if w.buf.len().saturating_add(extra) > cap {
        return Err(format!("{TOO_LARGE}: more than {cap} bytes encoded"));
    }
    Ok(())
}

/// The items one encoded value may have: fewer under a size cap (one per
/// [`BYTES_PER_ITEM`] bytes of it), because the host's decoded form of an
/// item costs tens of bytes however small its encoding.
fn item_budget() -> usize {
    MAX_ENCODED_NODES.min(SIZE_CAP.get() / BYTES_PER_ITEM)
}

/// Bytes of the size cap per item allowed (see [`item_budget`]).
const BYTES_PER_ITEM: usize = 16;

/// Encodes a value.
pub fn encode(w: &mut Writer, v: &MontyObject) -> Result<(), ValueError> {
    let (graph, root) = unstable::graph_parts(v);
    let mut budget = item_budget();
    enc(w, graph, root, 0, &mut budget)
}

/// Encodes call arguments as `[args], [name, value, ...]`.
pub fn encode_call_args(w: &mut Writer, args: &CallArgs) -> Result<(), ValueError> {
    let (graph, arg_ids, kwarg_ids) = unstable::call_args_parts(args);
    let mut budget = item_budget();
    w.array(arg_ids.len());
    for id in arg_ids {
        enc(w, graph, *id, 0, &mut budget)?;
    }
    w.array(kwarg_ids.len() * 2);
    for (k, v) in kwarg_ids {
        enc(w, graph, *k, 0, &mut budget)?;
        enc(w, graph, *v, 0, &mut budget)?;
    }
    Ok(())
}

fn enc_pairs(
    w: &mut Writer,
    g: &MontyGraph,
    pairs: &[(NodeId, NodeId)],
    depth: usize,
    budget: &mut usize,
) -> Result<(), ValueError> {
    w.array(pairs.len() * 2);
    for (k, v) in pairs {
        enc(w, g, *k, depth, budget)?;
        enc(w, g, *v, depth, budget)?;
    }
    Ok(())
}

fn enc_items(
    w: &mut Writer,
    g: &MontyGraph,
    ids: &[NodeId],
    depth: usize,
    budget: &mut usize,
) -> Result<(), ValueError> {
    w.array(ids.len());
    for id in ids {
        enc(w, g, *id, depth, budget)?;
    }
    Ok(())
}

fn enc_bigint(w: &mut Writer, b: &BigInt) {
    if let Ok(v) = i64::try_from(b) {
        w.int(v);
        return;
    }
    if b.sign() == Sign::Minus {
        // CBOR tag 3 carries -1 - n, i.e. the magnitude minus one.
        let m: BigUint = b.magnitude() - 1u32;
        w.tag(3);
        w.bytes(&m.to_bytes_be());
    } else {
        w.tag(2);
        w.bytes(&b.magnitude().to_bytes_be());
    }
}

fn enc_class(
    w: &mut Writer,
    g: &MontyGraph,
    c: &ClassTypeNode,
    depth: usize,
    budget: &mut usize,
) -> Result<(), ValueError> {
    w.tag(T_CLASS);
    w.array(5);
    w.text(&c.name);
    w.bytes(c.id.as_bytes());
    w.bool(c.host_defined);
    w.bool(c.is_dataclass);
    enc_pairs(w, g, &c.attrs, depth, budget)
}

#[allow(clippy::too_many_lines)]
fn enc(w: &mut Writer, g: &MontyGraph, id: NodeId, depth: usize, budget: &mut usize) -> Result<(), ValueError> {
    if depth > MAX_DEPTH {
        return Err("value is nested too deeply to transfer (more than 1000 levels)".into());
    }
    if *budget == 0 {
        return Err(format!("{TOO_LARGE}: more than {} items", item_budget()));
    }
    *budget -= 1;
    check_room(w, 16)?;
    let d = depth + 1;
    match g.node(id) {
        MontyNode::Ellipsis => {
            w.tag(T_ELLIPSIS);
            w.null();
        }
        MontyNode::NotImplemented => {
            w.tag(T_NOTIMPLEMENTED);
            w.null();
        }
        MontyNode::None => w.null(),
        MontyNode::Bool(b) => w.bool(*b),
        MontyNode::Int(i) => w.int(*i),
        MontyNode::BigInt(b) => {
            check_room(w, usize::try_from(b.bits() / 8).unwrap_or(usize::MAX))?;
            enc_bigint(w, b);
        }
        MontyNode::Float(f) => w.float(*f),
        MontyNode::Complex(c) => {
            w.tag(T_COMPLEX);
            w.array(2);
            w.float(c.real);
            w.float(c.imag);
        }
        MontyNode::String(s) => {
            check_room(w, s.len())?;
            w.text(s);
        }
        MontyNode::Bytes(b) => {
            check_room(w, b.len())?;
            w.bytes(b);
        }
        MontyNode::Date(x) => {
            w.tag(T_DATE);
            w.array(3);
            w.int(i64::from(x.year));
            w.uint(u64::from(x.month));
            w.uint(u64::from(x.day));
        }
        MontyNode::DateTime(x) => {
            w.tag(T_DATETIME);
            w.array(9);
            w.int(i64::from(x.year));
            w.uint(u64::from(x.month));
            w.uint(u64::from(x.day));
            w.uint(u64::from(x.hour));
            w.uint(u64::from(x.minute));
            w.uint(u64::from(x.second));
            w.uint(u64::from(x.microsecond));
            w.opt_int(x.offset_seconds.map(i64::from));
            w.opt_text(x.timezone_name.as_deref());
        }
        MontyNode::Time(x) => {
            w.tag(T_TIME);
            w.array(7);
            w.uint(u64::from(x.hour));
            w.uint(u64::from(x.minute));
            w.uint(u64::from(x.second));
            w.uint(u64::from(x.microsecond));
            w.opt_int(x.offset_seconds.map(i64::from));
            w.opt_text(x.timezone_name.as_deref());
            w.uint(u64::from(x.fold));
        }
        MontyNode::TimeDelta(x) => {
            w.tag(T_TIMEDELTA);
            w.array(3);
            w.int(i64::from(x.days));
            w.int(i64::from(x.seconds));
            w.int(i64::from(x.microseconds));
        }
        MontyNode::TimeZone(x) => {
            w.tag(T_TIMEZONE);
            w.array(2);
            w.int(i64::from(x.offset_seconds));
            w.opt_text(x.name.as_deref());
        }
        MontyNode::Decimal(s) => {
            w.tag(T_DECIMAL);
            w.text(s);
        }
        MontyNode::Exception { exc_type, arg } => {
            w.tag(T_EXCEPTION);
            w.array(2);
            let name: &'static str = exc_type.into();
            w.text(name);
            w.opt_text(arg.as_deref());
        }
        MontyNode::Type(t) => {
            w.tag(T_TYPE);
            w.text(t.name());
        }
        MontyNode::BuiltinFunction(f) => {
            w.tag(T_BUILTIN);
            w.text(&f.to_string());
        }
        MontyNode::Path(p) => {
            w.tag(T_PATH);
            w.text(p);
        }
        MontyNode::FileHandle(f) => {
            w.tag(T_FILE);
            w.array(3);
            w.text(&f.path);
            w.text(f.mode.as_str());
            w.uint(f.position);
        }
        MontyNode::Function { name, docstring } => {
            w.tag(T_FUNCTION);
            w.array(2);
            w.text(name);
            w.opt_text(docstring.as_deref());
        }
        MontyNode::Repr(s) => {
            w.tag(T_REPR);
            w.text(s);
        }
        MontyNode::Cycle(s) => {
            w.tag(T_CYCLE);
            w.text(s);
        }
        MontyNode::List(ids) => enc_items(w, g, ids, d, budget)?,
        MontyNode::Tuple(ids) => {
            w.tag(T_TUPLE);
            enc_items(w, g, ids, d, budget)?;
        }
        MontyNode::Set(ids) => {
            w.tag(T_SET);
            enc_items(w, g, ids, d, budget)?;
        }
        MontyNode::FrozenSet(ids) => {
            w.tag(T_FROZENSET);
            enc_items(w, g, ids, d, budget)?;
        }
        MontyNode::NamedTuple {
            type_name,
            field_names,
            values,
        } => {
            w.tag(T_NAMEDTUPLE);
            w.array(3);
            w.text(type_name);
            w.array(field_names.len());
            for f in field_names {
                w.text(f);
            }
            enc_items(w, g, values, d, budget)?;
        }
        MontyNode::Dict(pairs) => {
            w.tag(T_DICT);
            enc_pairs(w, g, pairs, d, budget)?;
        }
        MontyNode::ClassType(c) => enc_class(w, g, c, d, budget)?,
        MontyNode::ClassInstance {
            class_type,
            instance_id,
            attrs,
        } => {
            w.tag(T_INSTANCE);
            w.array(3);
            enc(w, g, *class_type, d, budget)?;
            w.bytes(instance_id.as_bytes());
            enc_pairs(w, g, attrs, d, budget)?;
        }
        MontyNode::Module { name, id, attrs } => {
            w.tag(T_MODULE);
            w.array(3);
            w.text(name);
            w.bytes(id.as_bytes());
            enc_pairs(w, g, attrs, d, budget)?;
        }
    }
    Ok(())
}

/// Decodes one value.
pub fn decode(r: &mut Reader<'_>) -> Result<MontyObject, ValueError> {
    let mut g = MontyGraph::new();
    let root = dec(r, &mut g, 0)?;
    unstable::object_from_graph(g, root).map_err(|e| format!("invalid value: {e:?}"))
}

/// Decodes `[name, value, name, value, ...]` into feed inputs.
pub fn decode_named(r: &mut Reader<'_>) -> Result<NamedValues, ValueError> {
    let n = r.array().map_err(|e| e.to_string())?;
    if n % 2 != 0 {
        return Err("named inputs must be name/value pairs".into());
    }
    let mut g = MontyGraph::new();
    let mut names = Vec::with_capacity(n / 2);
    for _ in 0..n / 2 {
        let name = r.text().map_err(|e| e.to_string())?.to_owned();
        let id = dec(r, &mut g, 0)?;
        names.push((name, id));
    }
    unstable::named_values_from_parts(g, names).map_err(|e| format!("invalid inputs: {e:?}"))
}

/// Decodes an array of values.
pub fn decode_list(r: &mut Reader<'_>) -> Result<Vec<MontyObject>, ValueError> {
    let n = r.array().map_err(|e| e.to_string())?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(decode(r)?);
    }
    Ok(out)
}

fn uuid(r: &mut Reader<'_>) -> Result<MontyUuid, ValueError> {
    let b = r.bytes().map_err(|e| e.to_string())?;
    MontyUuid::try_from_slice(b).ok_or_else(|| "uuid must be 16 bytes".to_owned())
}

fn dec_items(r: &mut Reader<'_>, g: &mut MontyGraph, depth: usize) -> Result<Vec<NodeId>, ValueError> {
    let n = r.array().map_err(|e| e.to_string())?;
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        ids.push(dec(r, g, depth)?);
    }
    Ok(ids)
}

fn dec_pairs(r: &mut Reader<'_>, g: &mut MontyGraph, depth: usize) -> Result<Vec<(NodeId, NodeId)>, ValueError> {
    let n = r.array().map_err(|e| e.to_string())?;
    if n % 2 != 0 {
        return Err("pairs array has an odd length".into());
    }
    let mut pairs = Vec::with_capacity(n / 2);
    for _ in 0..n / 2 {
        let k = dec(r, g, depth)?;
        let v = dec(r, g, depth)?;
        pairs.push((k, v));
    }
    Ok(pairs)
}

fn big_from_bytes(mag: &[u8], negative: bool) -> BigInt {
    let m = BigUint::from_bytes_be(mag);
    if negative {
        -(BigInt::from(m) + BigInt::from(1u8))
    } else {
        BigInt::from(m)
    }
}

fn int_node(b: BigInt) -> MontyNode {
    match i64::try_from(&b) {
        Ok(v) => MontyNode::Int(v),
        Err(_) => MontyNode::BigInt(b),
    }
}

fn small<T: TryFrom<i64>>(v: i64, what: &str) -> Result<T, ValueError> {
    T::try_from(v).map_err(|_| format!("{what} out of range"))
}

#[allow(clippy::too_many_lines)]
fn dec(r: &mut Reader<'_>, g: &mut MontyGraph, depth: usize) -> Result<NodeId, ValueError> {
    if depth > MAX_DEPTH {
        return Err("value is nested too deeply (more than 1000 levels)".into());
    }
    let e = |e: DecodeError| e.to_string();
    let d = depth + 1;
    let node = match r.peek_major().map_err(e)? {
        UINT | NINT => {
            let start_major = r.peek_major().map_err(e)?;
            let (_, arg) = r.head().map_err(e)?;
            if start_major == UINT {
                int_node(BigInt::from(arg))
            } else {
                int_node(-(BigInt::from(arg) + BigInt::from(1u8)))
            }
        }
        BYTES => MontyNode::Bytes(r.bytes().map_err(e)?.to_vec()),
        TEXT => MontyNode::String(r.text().map_err(e)?.to_owned()),
        ARRAY => MontyNode::List(dec_items(r, g, d)?),
        SIMPLE => match r.peek().map_err(e)? {
            0xf4 | 0xf5 => MontyNode::Bool(r.bool().map_err(e)?),
            0xf6 => {
                r.null().map_err(e)?;
                MontyNode::None
            }
            0xf9..=0xfb => MontyNode::Float(r.float().map_err(e)?),
            _ => return Err("unsupported CBOR simple value".into()),
        },
        TAG => {
            let tag = r.tag().map_err(e)?;
            match tag {
                2 | 3 => int_node(big_from_bytes(r.bytes().map_err(e)?, tag == 3)),
                T_TUPLE => MontyNode::Tuple(dec_items(r, g, d)?),
                T_DICT => MontyNode::Dict(dec_pairs(r, g, d)?),
                T_SET => MontyNode::Set(dec_items(r, g, d)?),
                T_FROZENSET => MontyNode::FrozenSet(dec_items(r, g, d)?),
                T_NAMEDTUPLE => {
                    r.array_of(3).map_err(e)?;
                    let type_name = r.text().map_err(e)?.to_owned();
                    let n = r.array().map_err(e)?;
                    let mut field_names = Vec::with_capacity(n);
                    for _ in 0..n {
                        field_names.push(r.text().map_err(e)?.to_owned());
                    }
                    let values = dec_items(r, g, d)?;
                    if values.len() != field_names.len() {
                        return Err("named tuple needs one value per field".into());
                    }
                    MontyNode::NamedTuple {
                        type_name,
                        field_names,
                        values,
                    }
                }
                T_CLASS => MontyNode::ClassType(Box::new(dec_class(r, g, d)?)),
                T_INSTANCE => {
                    r.array_of(3).map_err(e)?;
                    if r.tag().map_err(e)? != T_CLASS {
                        return Err("instance must start with its class".into());
                    }
                    let class = dec_class(r, g, d)?;
                    let class_type = g.push(MontyNode::ClassType(Box::new(class)));
                    let instance_id = uuid(r)?;
                    let attrs = dec_pairs(r, g, d)?;
                    MontyNode::ClassInstance {
                        class_type,
                        instance_id,
                        attrs,
                    }
                }
                T_EXCEPTION => {
                    r.array_of(2).map_err(e)?;
                    let name = r.text().map_err(e)?;
                    let exc_type = name
                        .parse::<ExcType>()
                        .map_err(|_| format!("unknown exception type {name:?}"))?;
                    let arg = r.opt_text().map_err(e)?.map(str::to_owned);
                    MontyNode::Exception { exc_type, arg }
                }
                T_PATH => MontyNode::Path(r.text().map_err(e)?.to_owned()),
                T_DATE => {
                    r.array_of(3).map_err(e)?;
                    MontyNode::Date(MontyDate {
                        year: r.i32().map_err(e)?,
                        month: r.u8().map_err(e)?,
                        day: r.u8().map_err(e)?,
                    })
                }
                T_DATETIME => {
                    r.array_of(9).map_err(e)?;
                    MontyNode::DateTime(MontyDateTime {
                        year: r.i32().map_err(e)?,
                        month: r.u8().map_err(e)?,
                        day: r.u8().map_err(e)?,
                        hour: r.u8().map_err(e)?,
                        minute: r.u8().map_err(e)?,
                        second: r.u8().map_err(e)?,
                        microsecond: r.u32().map_err(e)?,
                        offset_seconds: r.opt_int().map_err(e)?.map(|v| small(v, "offset")).transpose()?,
                        timezone_name: r.opt_text().map_err(e)?.map(str::to_owned),
                    })
                }
                T_TIME => {
                    r.array_of(7).map_err(e)?;
                    MontyNode::Time(MontyTime {
                        hour: r.u8().map_err(e)?,
                        minute: r.u8().map_err(e)?,
                        second: r.u8().map_err(e)?,
                        microsecond: r.u32().map_err(e)?,
                        offset_seconds: r.opt_int().map_err(e)?.map(|v| small(v, "offset")).transpose()?,
                        timezone_name: r.opt_text().map_err(e)?.map(str::to_owned),
                        fold: r.u8().map_err(e)?,
                    })
                }
                T_TIMEDELTA => {
                    r.array_of(3).map_err(e)?;
                    MontyNode::TimeDelta(MontyTimeDelta {
                        days: r.i32().map_err(e)?,
                        seconds: r.i32().map_err(e)?,
                        microseconds: r.i32().map_err(e)?,
                    })
                }
                T_TIMEZONE => {
                    r.array_of(2).map_err(e)?;
                    MontyNode::TimeZone(MontyTimeZone {
                        offset_seconds: r.i32().map_err(e)?,
                        name: r.opt_text().map_err(e)?.map(str::to_owned),
                    })
                }
                T_FUNCTION => {
                    r.array_of(2).map_err(e)?;
                    MontyNode::Function {
                        name: r.text().map_err(e)?.to_owned(),
                        docstring: r.opt_text().map_err(e)?.map(str::to_owned),
                    }
                }
                T_REPR => MontyNode::Repr(r.text().map_err(e)?.to_owned()),
                T_CYCLE => MontyNode::Cycle(r.text().map_err(e)?.to_owned()),
                T_ELLIPSIS | T_NOTIMPLEMENTED => {
                    if !r.null().map_err(e)? {
                        return Err("Ellipsis/NotImplemented tag must wrap null".into());
                    }
                    if tag == T_ELLIPSIS {
                        MontyNode::Ellipsis
                    } else {
                        MontyNode::NotImplemented
                    }
                }
                T_COMPLEX => {
                    r.array_of(2).map_err(e)?;
                    MontyNode::Complex(monty_types::MontyComplex {
                        real: r.float().map_err(e)?,
                        imag: r.float().map_err(e)?,
                    })
                }
                T_DECIMAL => MontyNode::Decimal(r.text().map_err(e)?.to_owned()),
                T_TYPE => {
                    let name = r.text().map_err(e)?;
                    MontyNode::Type(MontyType::from_type_name(name).ok_or_else(|| format!("unknown type {name:?}"))?)
                }
                T_BUILTIN => {
                    let name = r.text().map_err(e)?;
                    MontyNode::BuiltinFunction(
                        name.parse::<BuiltinsFunctions>()
                            .map_err(|_| format!("unknown builtin function {name:?}"))?,
                    )
                }
                T_MODULE => {
                    r.array_of(3).map_err(e)?;
                    let name = r.text().map_err(e)?.to_owned();
                    let id = uuid(r)?;
                    let attrs = dec_pairs(r, g, d)?;
                    MontyNode::Module { name, id, attrs }
                }
                T_FILE => {
                    r.array_of(3).map_err(e)?;
                    let path = r.text().map_err(e)?.to_owned();
                    let mode_s = r.text().map_err(e)?;
                    let mode = mode_s
                        .parse::<FileMode>()
                        .map_err(|_| format!("invalid file mode {mode_s:?}"))?;
                    let position = r.uint().map_err(e)?;
                    MontyNode::FileHandle(MontyFileHandle { path, mode, position })
                }
                other => return Err(format!("unknown CBOR tag {other}")),
            }
        }
        _ => return Err("CBOR maps are not Python values (dicts use tag 40001)".into()),
    };
    Ok(g.push(node))
}

fn dec_class(r: &mut Reader<'_>, g: &mut MontyGraph, depth: usize) -> Result<ClassTypeNode, ValueError> {
    let e = |e: DecodeError| e.to_string();
    r.array_of(5).map_err(e)?;
    let name = r.text().map_err(e)?.to_owned();
    let id = uuid(r)?;
    let host_defined = r.bool().map_err(e)?;
    let is_dataclass = r.bool().map_err(e)?;
    let attrs = dec_pairs(r, g, depth)?;
    Ok(ClassTypeNode {
        name,
        id,
        host_defined,
        is_dataclass,
        attrs,
    })
}
