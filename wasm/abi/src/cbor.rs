//! A minimal CBOR (RFC 8949) writer and reader: exactly what the boundary
//! needs, definite lengths only, shortest-form heads, 64-bit floats out.

use std::fmt;

/// Major types.
pub const UINT: u8 = 0;
pub const NINT: u8 = 1;
pub const BYTES: u8 = 2;
pub const TEXT: u8 = 3;
pub const ARRAY: u8 = 4;
pub const TAG: u8 = 6;
pub const SIMPLE: u8 = 7;

/// Appends CBOR items to a byte vector.
#[derive(Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    /// Writes a head: major type and argument, in shortest form.
    pub fn head(&mut self, major: u8, arg: u64) {
        let m = major << 5;
        if arg < 24 {
            self.buf.push(m | arg as u8);
        } else if arg <= u64::from(u8::MAX) {
            self.buf.extend_from_slice(&[m | 24, arg as u8]);
        } else if arg <= u64::from(u16::MAX) {
            self.buf.push(m | 25);
            self.buf.extend_from_slice(&(arg as u16).to_be_bytes());
        } else if arg <= u64::from(u32::MAX) {
            self.buf.push(m | 26);
            self.buf.extend_from_slice(&(arg as u32).to_be_bytes());
        } else {
            self.buf.push(m | 27);
            self.buf.extend_from_slice(&arg.to_be_bytes());
        }
    }

    pub fn uint(&mut self, v: u64) {
        self.head(UINT, v);
    }

    pub fn int(&mut self, v: i64) {
        if v >= 0 {
            self.head(UINT, v.cast_unsigned());
        } else {
            // -1 - v, computed without overflow for i64::MIN
            self.head(NINT, (!v).cast_unsigned());
        }
    }

    pub fn float(&mut self, v: f64) {
        self.buf.push(0xfb);
        self.buf.extend_from_slice(&v.to_bits().to_be_bytes());
    }

    pub fn text(&mut self, s: &str) {
        self.head(TEXT, s.len() as u64);
        self.buf.extend_from_slice(s.as_bytes());
    }

    pub fn bytes(&mut self, b: &[u8]) {
        self.head(BYTES, b.len() as u64);
        self.buf.extend_from_slice(b);
    }

    pub fn array(&mut self, len: usize) {
        self.head(ARRAY, len as u64);
    }

    pub fn tag(&mut self, tag: u64) {
        self.head(TAG, tag);
    }

    pub fn bool(&mut self, v: bool) {
        self.buf.push(if v { 0xf5 } else { 0xf4 });
    }

    pub fn null(&mut self) {
        self.buf.push(0xf6);
    }

    pub fn opt_text(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.text(s),
            None => self.null(),
        }
    }

    pub fn opt_int(&mut self, v: Option<i64>) {
        match v {
            Some(v) => self.int(v),
            None => self.null(),
        }
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub struct DecodeError {
    pub offset: usize,
    pub reason: &'static str,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "malformed CBOR at byte {}: {}", self.offset, self.reason)
    }
}

pub type Result<T> = std::result::Result<T, DecodeError>;

/// Reads CBOR items from a byte slice.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0 }
    }

    pub fn err<T>(&self, reason: &'static str) -> Result<T> {
        Err(DecodeError {
            offset: self.pos,
            reason,
        })
    }

    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.remaining() < n {
            return self.err("unexpected end of input");
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// The next byte without consuming it.
    pub fn peek(&self) -> Result<u8> {
        match self.data.get(self.pos) {
            Some(b) => Ok(*b),
            None => self.err("unexpected end of input"),
        }
    }

    /// Major type of the next item.
    pub fn peek_major(&self) -> Result<u8> {
        Ok(self.peek()? >> 5)
    }

    /// Reads a head; returns (major, argument). Indefinite lengths are rejected.
    pub fn head(&mut self) -> Result<(u8, u64)> {
        let b = self.take(1)?[0];
        let major = b >> 5;
        let info = b & 0x1f;
        let arg = match info {
            0..=23 => u64::from(info),
            24 => u64::from(self.take(1)?[0]),
            25 => u64::from(u16::from_be_bytes(self.take(2)?.try_into().unwrap_or_default())),
            26 => u64::from(u32::from_be_bytes(self.take(4)?.try_into().unwrap_or_default())),
            27 => u64::from_be_bytes(self.take(8)?.try_into().unwrap_or_default()),
            _ => return self.err("indefinite or reserved length"),
        };
        Ok((major, arg))
    }

    fn expect(&mut self, major: u8, what: &'static str) -> Result<u64> {
        let start = self.pos;
        let (m, arg) = self.head()?;
        if m != major {
            self.pos = start;
            return self.err(what);
        }
        Ok(arg)
    }

    /// A length that the remaining input could possibly hold.
    fn len(&mut self, major: u8, what: &'static str) -> Result<usize> {
        let n = self.expect(major, what)?;
        if n > self.remaining() as u64 {
            return self.err("length exceeds input");
        }
        Ok(n as usize)
    }

    pub fn array(&mut self) -> Result<usize> {
        self.len(ARRAY, "expected array")
    }

    /// Reads an array header and checks its length.
    pub fn array_of(&mut self, n: usize) -> Result<()> {
        if self.array()? != n {
            return self.err("array has the wrong length");
        }
        Ok(())
    }

    pub fn text(&mut self) -> Result<&'a str> {
        let n = self.len(TEXT, "expected text")?;
        let b = self.take(n)?;
        match std::str::from_utf8(b) {
            Ok(s) => Ok(s),
            Err(_) => self.err("text is not valid UTF-8"),
        }
    }

    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.len(BYTES, "expected bytes")?;
        self.take(n)
    }

    pub fn tag(&mut self) -> Result<u64> {
        self.expect(TAG, "expected tag")
    }

    pub fn uint(&mut self) -> Result<u64> {
        self.expect(UINT, "expected unsigned integer")
    }

    pub fn u32(&mut self) -> Result<u32> {
        match u32::try_from(self.uint()?) {
            Ok(v) => Ok(v),
            Err(_) => self.err("integer out of range"),
        }
    }

    /// A signed integer that fits i64.
    pub fn int(&mut self) -> Result<i64> {
        let start = self.pos;
        let (m, arg) = self.head()?;
        let v = match m {
            UINT => i64::try_from(arg).ok(),
            NINT => i64::try_from(arg).ok().map(|a| -1 - a),
            _ => {
                self.pos = start;
                return self.err("expected integer");
            }
        };
        match v {
            Some(v) => Ok(v),
            None => self.err("integer out of range"),
        }
    }

    pub fn i32(&mut self) -> Result<i32> {
        match i32::try_from(self.int()?) {
            Ok(v) => Ok(v),
            Err(_) => self.err("integer out of range"),
        }
    }

    pub fn u8(&mut self) -> Result<u8> {
        match u8::try_from(self.uint()?) {
            Ok(v) => Ok(v),
            Err(_) => self.err("integer out of range"),
        }
    }

    pub fn float(&mut self) -> Result<f64> {
        match self.take(1)?[0] {
            0xf9 => {
                let b = self.take(2)?;
                Ok(half_to_f64(u16::from_be_bytes([b[0], b[1]])))
            }
            0xfa => Ok(f64::from(f32::from_be_bytes(
                self.take(4)?.try_into().unwrap_or_default(),
            ))),
            0xfb => Ok(f64::from_be_bytes(self.take(8)?.try_into().unwrap_or_default())),
            _ => {
                self.pos -= 1;
                self.err("expected float")
            }
        }
    }

    pub fn bool(&mut self) -> Result<bool> {
        match self.take(1)?[0] {
            0xf4 => Ok(false),
            0xf5 => Ok(true),
            _ => {
                self.pos -= 1;
                self.err("expected bool")
            }
        }
    }

    /// True (and consumed) if the next item is null.
    pub fn null(&mut self) -> Result<bool> {
        if self.peek()? == 0xf6 {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub fn opt_text(&mut self) -> Result<Option<&'a str>> {
        if self.null()? { Ok(None) } else { self.text().map(Some) }
    }

    pub fn opt_int(&mut self) -> Result<Option<i64>> {
        if self.null()? { Ok(None) } else { self.int().map(Some) }
    }

    pub fn opt_uint(&mut self) -> Result<Option<u64>> {
        if self.null()? { Ok(None) } else { self.uint().map(Some) }
    }
}

/// IEEE 754 half precision to f64.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let frac = f64::from(h & 0x3ff);
    let mag = match exp {
        0 => frac * 2f64.powi(-24),
        31 if frac == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + frac / 1024.0) * 2f64.powi(exp - 15),
    };
    sign * mag
}
