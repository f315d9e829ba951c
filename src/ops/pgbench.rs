//! pgbench's tables as the caller's pgbench will find them.

use super::error::{spi, OrRaise};
use super::read;

/// Where pgbench finds its tables for the caller: pgbench connects with
/// the role's default search_path ("$user", public unless ALTER ROLE /
/// DATABASE changed it); a SQL function runs behind a fixed one, so this
/// looks where pgbench will. None without pgbench_accounts there.
pub fn pgbench_schema() -> Option<String> {
    read::one::<String>(
        "SELECT (SELECT n.nspname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                  WHERE c.relname = 'pgbench_accounts' AND c.relkind IN ('r', 'p')
                    AND n.nspname IN (current_user, 'public')
                  ORDER BY n.nspname = current_user DESC LIMIT 1)", &[],
    )
    .map_err(spi("looking for pgbench's tables"))
    .or_raise()
}
