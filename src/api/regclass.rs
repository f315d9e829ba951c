//! PostgreSQL's `regclass` for pgrx: a relation's oid that prints as its
//! (quoted, search_path-relative) name. pgrx's own PgRelation opens and locks
//! the relation, which a catalog report and a lock-with-timeout must not do.

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::prelude::*;
use pgrx::{impl_sql_translatable, pg_sys};

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

unsafe impl<'fcx> ArgAbi<'fcx> for RegClass {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        let index = arg.index();
        unsafe { arg.unbox_arg_using_from_datum() }
            .unwrap_or_else(|| panic!("argument {index} must not be null"))
    }
}

unsafe impl BoxRet for RegClass {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.into_datum() {
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

impl_sql_translatable!(RegClass, "regclass");
