//! `storlab.probe_read_path()` (PostgreSQL 18): cold sequential and bitmap
//! heap scans of a scratch table in one tablespace, at several
//! effective_io_concurrency values, each stored as a row of `storlab.probes`.

use pgrx::prelude::*;

use crate::ops::error::{raise, required, OrRaise};
use crate::ops::probe::fetch_rows;
use crate::ops::read_path::{run, server_version_num};
use crate::ops::targets::resolve;
use crate::sqltypes::Name;
use storlab_core::request::read_path as request;

/// Time PostgreSQL's own read path in a tablespace: a cold sequential scan
/// and a cold bitmap heap scan of a scratch table of `table_size` bytes, at
/// each effective_io_concurrency value, `repetitions` times (values
/// rotated between repetitions); returns the stored rows (suite
/// 'read_path'). PostgreSQL 18 and later (0A000 before).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn probe_read_path(
    tablespace: Option<Name>,
    effective_io_concurrency: default!(Option<Vec<Option<i32>>>, "'{1,16,64}'"),
    table_size: default!(Option<i64>, 67108864),
    repetitions: default!(Option<i32>, 3),
    label: default!(Option<String>, "NULL"),
) -> SetOfIterator<'static, pgrx::composite_type!('static, "probes")> {
    let _called = crate::ops::error::called("storlab.probe_read_path");
    crate::ops::standby::refuse_writes("run the read-path probe (it writes a scratch table)")
        .or_raise();
    // before anything else: on 15 and 17 every call is refused alike
    if let Some(e) = request::unsupported_major(server_version_num()) {
        raise(e);
    }
    let tablespace = required(tablespace, "tablespace");
    let eic = required(effective_io_concurrency, "effective_io_concurrency");
    let args = request::check(
        &eic,
        required(table_size, "table_size"),
        required(repetitions, "repetitions"),
    )
    .or_raise();
    let target = resolve(tablespace.as_str()).or_raise();
    let ids = run(&target, &args, label.as_deref()).or_raise();
    SetOfIterator::new(fetch_rows(&ids))
}
