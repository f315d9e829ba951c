//! PostgreSQL's `regclass` for pgrx: a relation's oid that prints as its
//! (quoted, search_path-relative) name. pgrx's own PgRelation opens and locks
//! the relation, which a catalog report and a lock-with-timeout must not do.

use pgrx::pg_sys;
use pgrx::prelude::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RegClass(pub pg_sys::Oid);

impl IntoDatum for RegClass {
    fn into_datum(self) -> Option<pg_sys::Datum> {
        Some(pg_sys::Datum::from(self.0))
    }

    fn type_oid() -> pg_sys::Oid {
        pg_sys::REGCLASSOID
    }
}

impl FromDatum for RegClass {
    unsafe fn from_polymorphic_datum(
        datum: pg_sys::Datum,
        is_null: bool,
        _: pg_sys::Oid,
    ) -> Option<Self> {
        // SAFETY: a regclass datum is an Oid passed by value.
        (!is_null)
            .then(|| RegClass(unsafe { pg_sys::Oid::from_datum(datum, false) }.expect("not null")))
    }
}

impl_datum_abi!(RegClass, "regclass");
