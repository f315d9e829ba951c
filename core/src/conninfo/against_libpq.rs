//! The parser against libpq itself: PQconninfoParse of the libpq this
//! machine has (loaded at run time, so the core links no libpq), on the
//! table's cases and on thousands of generated strings. libpq is looked
//! for as $STORLAB_LIBPQ, then $PG_BIN/../lib/libpq.so.5 (a PostgreSQL
//! built from source), then libpq.so.5 on the loader's path; a machine
//! that builds storlab has one, and the test fails without it.

use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, CStr, CString};

use super::*;

#[repr(C)]
struct PQconninfoOption {
    keyword: *const c_char,
    envvar: *const c_char,
    compiled: *const c_char,
    val: *const c_char,
    label: *const c_char,
    dispchar: *const c_char,
    dispsize: c_int,
}

type ParseFn = unsafe extern "C" fn(*const c_char, *mut *mut c_char) -> *mut PQconninfoOption;
type DefaultsFn = unsafe extern "C" fn() -> *mut PQconninfoOption;
type FreeFn = unsafe extern "C" fn(*mut PQconninfoOption);
type FreememFn = unsafe extern "C" fn(*mut std::ffi::c_void);

struct Libpq {
    parse: ParseFn,
    free: FreeFn,
    freemem: FreememFn,
    keywords: Vec<String>,
}

fn sym<T: Copy>(lib: *mut std::ffi::c_void, name: &CStr) -> T {
    // SAFETY: dlsym on a handle dlopen returned; the caller names the
    // function's real signature.
    let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
    assert!(!p.is_null(), "libpq has no {name:?}");
    unsafe { std::mem::transmute_copy(&p) }
}

fn libpq() -> Libpq {
    let mut candidates: Vec<String> = Vec::new();
    if let Ok(p) = std::env::var("STORLAB_LIBPQ") {
        candidates.push(p);
    }
    if let Ok(bin) = std::env::var("PG_BIN") {
        candidates.push(format!("{bin}/../lib/libpq.so.5"));
    }
    candidates.push("libpq.so.5".into());
    for c in &candidates {
        let name = CString::new(c.as_str()).unwrap();
        // SAFETY: dlopen of a shared library by name.
        let lib = unsafe { libc::dlopen(name.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            continue;
        }
        let defaults: DefaultsFn = sym(lib, c"PQconndefaults");
        let free: FreeFn = sym(lib, c"PQconninfoFree");
        // SAFETY: PQconndefaults returns an array ended by a NULL keyword.
        let keywords = unsafe {
            let opts = defaults();
            let mut out = Vec::new();
            let mut i = 0;
            while !(*opts.add(i)).keyword.is_null() {
                out.push(
                    CStr::from_ptr((*opts.add(i)).keyword)
                        .to_string_lossy()
                        .into_owned(),
                );
                i += 1;
            }
            free(opts);
            out
        };
        return Libpq {
            parse: sym(lib, c"PQconninfoParse"),
            free,
            freemem: sym(lib, c"PQfreemem"),
            keywords,
        };
    }
    panic!("no libpq to compare with (tried {candidates:?}): set STORLAB_LIBPQ to a libpq.so.5");
}

impl Libpq {
    /// libpq's reading: the keywords it set, or None when it refuses.
    fn read(&self, conninfo: &str) -> Option<BTreeMap<String, String>> {
        let c = CString::new(conninfo).unwrap();
        let mut err: *mut c_char = std::ptr::null_mut();
        // SAFETY: PQconninfoParse takes a C string and an error pointer; the
        // array it returns ends with a NULL keyword and is freed below.
        unsafe {
            let opts = (self.parse)(c.as_ptr(), &mut err);
            if !err.is_null() {
                (self.freemem)(err.cast());
            }
            if opts.is_null() {
                return None;
            }
            let mut out = BTreeMap::new();
            let mut i = 0;
            while !(*opts.add(i)).keyword.is_null() {
                let o = &*opts.add(i);
                if !o.val.is_null() {
                    out.insert(
                        CStr::from_ptr(o.keyword).to_string_lossy().into_owned(),
                        CStr::from_ptr(o.val).to_string_lossy().into_owned(),
                    );
                }
                i += 1;
            }
            (self.free)(opts);
            Some(out)
        }
    }

    /// Ours, as libpq would store it: its keywords only (another key is
    /// libpq's error), the last value of a key given twice.
    fn ours(&self, conninfo: &str) -> Option<BTreeMap<String, String>> {
        let pairs = parse(conninfo).ok()?;
        if pairs.iter().any(|(k, _)| !self.keywords.contains(k)) {
            return None;
        }
        Some(pairs.into_iter().collect())
    }
}

#[test]
fn table_cases_agree_with_libpq() {
    let lib = libpq();
    for (conninfo, _) in tests::CASES {
        assert_eq!(lib.ours(conninfo), lib.read(conninfo), "{conninfo:?}");
    }
}

#[test]
fn generated_strings_agree_with_libpq() {
    let lib = libpq();
    // items of a key, `=` and a value, each part drawn from pieces that meet
    // one of libpq's rules, now and then a piece out of place
    let keys = [
        "password",
        "host",
        "user",
        "dbname",
        "port",
        "nokey",
        "",
        "pass word",
    ];
    let spaces = ["", "", " ", "  ", "\t", "\n", "\x0b", "\r", "\u{a0}"];
    let value_pieces = [
        "a", "b c", "'", "\\", "\\\\", "\\'", "\\ ", "x=y", "é", "\u{a0}", "=", "\t",
    ];
    let mut rng = fastrand::Rng::with_seed(39);
    let (mut agreed, mut read) = (0, 0);
    for _ in 0..50_000 {
        let mut s = String::new();
        for _ in 0..rng.usize(1..4) {
            s += spaces[rng.usize(..spaces.len())];
            s += keys[rng.usize(..keys.len())];
            s += spaces[rng.usize(..spaces.len())];
            if rng.usize(..10) > 0 {
                s.push('=');
            }
            s += spaces[rng.usize(..spaces.len())];
            let quoted = rng.bool();
            if quoted {
                s.push('\'');
            }
            for _ in 0..rng.usize(0..5) {
                s += value_pieces[rng.usize(..value_pieces.len())];
            }
            if quoted && rng.usize(..10) > 0 {
                s.push('\'');
            }
            s += spaces[rng.usize(..spaces.len())];
            s.push(' ');
        }
        let (ours, theirs) = (lib.ours(&s), lib.read(&s));
        assert_eq!(ours, theirs, "{s:?}");
        agreed += 1;
        read += theirs.is_some() as usize;
    }
    // enough of them readable for the values to be compared, not just errors
    assert!(read > agreed / 10, "{read} of {agreed} readable");
}
