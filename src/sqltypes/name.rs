//! PostgreSQL's `name` type for pgrx, which has no mapping for it.
//!
//! Tablespaces, roles and schemas are `name`s in the catalogs; taking and
//! returning `name` (not `text`) lets callers join our results with
//! pg_tablespace and friends without casts, and matches the documented signatures.

use std::ffi::{c_char, CStr};

use pgrx::pg_sys;
use pgrx::prelude::*;

#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name(pub String);

impl Name {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for Name {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A name is at most NAMEDATALEN - 1 bytes; longer input is cut on a
/// character boundary, as PostgreSQL itself does (with a NOTICE) for identifiers.
fn clip(s: &str) -> &str {
    let max = pg_sys::NAMEDATALEN as usize - 1;
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl IntoDatum for Name {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        let bytes = clip(&self.0).as_bytes();
        // SAFETY: NameData is a fixed NAMEDATALEN-byte, NUL-padded buffer.
        unsafe {
            let p = pg_sys::palloc0(pg_sys::NAMEDATALEN as usize).cast::<u8>();
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), p, bytes.len());
            Some(pg_sys::Datum::from(p))
        }
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::NAMEOID
    }
}

impl FromDatum for Name {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        if is_null {
            return None;
        }
        // SAFETY: a non-null name datum points at a NUL-terminated NameData.
        let s = unsafe { CStr::from_ptr(datum.cast_mut_ptr::<c_char>()) };
        Some(Name(s.to_string_lossy().into_owned()))
    }
}

impl_datum_abi!(Name, "name");

// SAFETY: an element of a name[] is a pointer to a NUL-terminated NameData
// inside the array, valid for the array's lifetime; the String copies it.
unsafe impl pgrx::datum::UnboxDatum for Name {
    type As<'src> = Name;

    unsafe fn unbox<'src>(datum: pgrx::datum::Datum<'src>) -> Self::As<'src>
    where
        Self: 'src,
    {
        // SAFETY: see the impl's comment.
        let s = unsafe { CStr::from_ptr(datum.sans_lifetime().cast_mut_ptr::<c_char>()) };
        Name(s.to_string_lossy().into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::clip;

    #[test]
    fn clip_keeps_short_names_and_cuts_on_char_boundaries() {
        assert_eq!(clip("lab_ram"), "lab_ram");
        let long = "é".repeat(40); // 80 bytes
        let c = clip(&long);
        assert_eq!(c.len(), 62, "63 would split a 2-byte character");
        assert!(c.chars().all(|ch| ch == 'é'));
    }
}
