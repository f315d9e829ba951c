//! SQL types pgrx 0.18 does not map (`name`, `regclass`), shared by the SQL
//! functions, the operations and the job worker.

/// Lets a type with FromDatum + IntoDatum be a #[pg_extern] argument and
/// return value with the given SQL type name (pgrx maps neither `name` nor
/// `regclass` itself).
macro_rules! impl_datum_abi {
    ($ty:ty, $sql:literal) => {
        unsafe impl<'fcx> pgrx::callconv::ArgAbi<'fcx> for $ty {
            unsafe fn unbox_arg_unchecked(arg: pgrx::callconv::Arg<'_, 'fcx>) -> Self {
                let index = arg.index();
                unsafe { arg.unbox_arg_using_from_datum() }
                    .unwrap_or_else(|| panic!("argument {index} must not be null"))
            }
        }

        unsafe impl pgrx::callconv::BoxRet for $ty {
            unsafe fn box_into<'fcx>(
                self,
                fcinfo: &mut pgrx::callconv::FcInfo<'fcx>,
            ) -> pgrx::datum::Datum<'fcx> {
                match pgrx::IntoDatum::into_datum(self) {
                    Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
                    None => fcinfo.return_null(),
                }
            }
        }

        pgrx::impl_sql_translatable!($ty, $sql);
    };
}

pub mod name;
pub mod regclass;

pub use name::Name;
pub use regclass::RegClass;
