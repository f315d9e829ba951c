//! Writes storlab's own rows from `storlab_core::record` structs, by column
//! name: the statements of `Record`, for the columns the installed table
//! has (a library may run under an install not updated yet). Called inside
//! the identity that writes the rows (`as_owner`, a job's `bookkeeping`).

use storlab_core::record::Record;

use super::error::Raise;
use super::read;

/// The installed table's columns, in order.
pub fn table_columns(table: &str) -> Result<Vec<String>, pgrx::spi::Error> {
    read::one::<Vec<String>>(
        "SELECT pg_catalog.array_agg(a.attname::pg_catalog.text ORDER BY a.attnum)
           FROM pg_catalog.pg_attribute a
          WHERE a.attrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass($1)::pg_catalog.oid
            AND a.attnum OPERATOR(pg_catalog.>) 0 AND NOT a.attisdropped",
        &[table.into()],
    )
    .map(Option::unwrap_or_default)
}

fn columns<R: Record>(r: &R) -> Result<Vec<String>, pgrx::spi::Error> {
    let table = table_columns(R::TABLE)?;
    Ok(r.columns_in(&table).unwrap_or_else(|e| e.raise()))
}

/// `R::insert_sql` for this record, into the installed table.
pub fn insert_sql<R: Record>(r: &R, computed: &[(&str, &str)]) -> Result<String, pgrx::spi::Error> {
    Ok(R::insert_sql(&columns(r)?, computed))
}

/// `R::update_sql` for this record, of the installed table.
pub fn update_sql<R: Record>(
    r: &R,
    key: &str,
    computed: &[(&str, &str)],
) -> Result<String, pgrx::spi::Error> {
    Ok(R::update_sql(&columns(r)?, key, computed))
}
