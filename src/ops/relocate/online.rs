//! Online moves from the caller's side: the plan of `move`, `apply_layout`,
//! `restore_layout` or `undo_batch` with `online => true` (made by
//! the mover), checked at the call for everything pg_repack needs,
//! then handed to a `move_online` job (`jobs::move_online`) that runs
//! pg_repack as the caller. What cannot work is refused here, before
//! anything runs: no job starts, no row is written.

use std::path::PathBuf;
use std::time::Duration;

use pgrx::prelude::*;
use pgrx::JsonB;

use super::catalog::{rels, table_of, RelocationRow, Step};
use super::checks::{claim, refuse_what_cannot_move, volatile_targets};
use crate::ops::error::{invalid, spi, Error, OrRaise, Raise, SqlState};
use crate::ops::identity::{as_owner, caller, current_user, is_superuser};
use crate::ops::jobs;
use crate::ops::server::{hostname, system_identifier};
use storlab_core::record::{Record, Relocation};
use storlab_core::relocate::{human_bytes, statement, Kind};
use storlab_core::repack::{self, Version};
use storlab_core::request::job::JobSpec;
use storlab_core::request::relocate::{
    MoveOnline, OnlineIndex, OnlineParent, OnlineTable, ONLINE_LABEL,
};
use storlab_core::sql_text::ident;

/// Starts the job that moves `steps` online (or, with `dry_run`, returns
/// its plan): the rows the job will write, with the batch they will carry.
pub(super) fn start(
    steps: Vec<Step>,
    lock_timeout: Duration,
    dry_run: bool,
    label: Option<&str>,
    undoes: Option<i64>,
) -> Vec<RelocationRow> {
    for s in &steps {
        if s.rel.kind == Kind::MaterializedView {
            invalid(format!(
                "{} is a materialized view: pg_repack moves tables only",
                s.rel.qualified
            ))
            .with_hint("storlab.move() without online moves it (ACCESS EXCLUSIVE for the copy; REFRESH MATERIALIZED VIEW takes the same), and storlab.move_indexes_online() its indexes.")
            .raise();
        }
    }
    // claimed first: the check of queued jobs below then sees a job that
    // another session's transaction committed meanwhile
    let (tables, parents) = group(&steps);
    if !dry_run {
        claim(&tables);
    }
    // pg_repack rebuilds every index of a table it moves: those it does not
    // move (no --moveidx) where they are, beside the old ones until its
    // drop. Room for those copies is checked with the call's own.
    let mut room: Vec<Step> = Vec::new();
    for t in tables
        .iter()
        .filter(|t| t.moves() && !t.repack_moves_indexes())
    {
        for i in &t.indexes {
            if let Some(rel) = rels(
                "WHERE c.oid = $1",
                vec![pg_sys::Oid::from(i.relation).into()],
            )
            .pop()
            {
                let to = rel.tablespace.clone();
                room.push(Step { rel, to });
            }
        }
    }
    let planned = steps.len();
    let all: Vec<Step> = steps.into_iter().chain(room).collect();
    let (folders, _) = refuse_what_cannot_move(&all, lock_timeout, dry_run, None);
    // as a move without online says it: durable data onto storage a reboot empties
    for (ts, fs) in volatile_targets(&folders) {
        let onto: Vec<&str> = tables
            .iter()
            .filter(|t| t.moves() && t.to == ts)
            .map(|t| t.name.as_str())
            .collect();
        if !onto.is_empty() {
            warning!(
                "storlab: durable data is to move onto volatile storage: {ts} is on {fs}, which a reboot empties; {} logged table(s) go there ({}): after a reboot their files are gone and the database with them",
                onto.len(),
                onto.join(", ")
            );
        }
    }
    let version = if tables.iter().any(OnlineTable::moves) {
        let version = available_version();
        for t in tables.iter().filter(|t| t.moves()) {
            check_table(t, version);
        }
        Some(version)
    } else {
        None
    };
    let batch = (!dry_run && planned > 0).then(|| {
        as_owner(|| Spi::get_one::<i64>("SELECT pg_catalog.nextval('storlab.relocation_batches')"))
            .map_err(spi("starting a batch"))
            .or_raise()
            .expect("nextval")
    });
    let job = batch.map(|batch| {
        jobs::start(JobSpec::MoveOnline(MoveOnline {
            batch,
            tables: tables.clone(),
            lock_timeout_ms: lock_timeout.as_millis() as u64,
            repack_version: version.map(|v| v.to_string()).unwrap_or_default(),
            label: label.map(str::to_owned),
            undoes_batch: undoes,
            parents: parents.clone(),
        }))
    });
    if let (Some(job), Some(batch)) = (job, batch) {
        notice!(
            "storlab: storlab job {job} moves {} online (batch {batch}); CALL storlab.wait({job}) waits for it, storlab.jobs shows its phase",
            what(&tables, &parents)
        );
    }
    plan_rows(&tables, &parents, lock_timeout, batch, job, label, undoes)
}

/// The tables of the plan with every valid index of each (where it is, and
/// where it must end), and the partitioned relations. An index whose table
/// does not move makes an entry whose table stays (REINDEX CONCURRENTLY
/// only).
fn group(steps: &[Step]) -> (Vec<OnlineTable>, Vec<OnlineParent>) {
    let mut tables: Vec<OnlineTable> = Vec::new();
    let mut parents = Vec::new();
    let index_target = |oid: pg_sys::Oid| {
        steps
            .iter()
            .find(|s| s.rel.oid == oid && s.rel.kind == Kind::Index)
            .map(|s| s.to.clone())
    };
    for s in steps {
        match s.rel.kind {
            Kind::Table => {
                let indexes = indexes_of(s.rel.oid, &index_target);
                tables.push(OnlineTable {
                    relation: s.rel.oid.to_u32(),
                    name: s.rel.qualified.clone(),
                    from: s.rel.tablespace.clone(),
                    to: s.to.clone(),
                    bytes: s.rel.bytes,
                    indexes,
                });
            }
            Kind::PartitionedTable | Kind::PartitionedIndex => parents.push(OnlineParent {
                relation: s.rel.oid.to_u32(),
                name: s.rel.qualified.clone(),
                kind: s.rel.kind.as_str().to_string(),
                from: s.rel.tablespace.clone(),
                to: s.to.clone(),
            }),
            _ => {}
        }
    }
    // indexes whose table is not moved: the table stays, they are rebuilt
    for s in steps.iter().filter(|s| s.rel.kind == Kind::Index) {
        let table = table_of(s.rel.oid);
        if tables.iter().any(|t| t.relation == table.to_u32()) {
            continue;
        }
        let Some(t) = rels("WHERE c.oid = $1", vec![table.into()]).pop() else {
            continue;
        };
        if t.kind != Kind::Table && t.kind != Kind::MaterializedView {
            continue;
        }
        tables.push(OnlineTable {
            relation: t.oid.to_u32(),
            name: t.qualified.clone(),
            from: t.tablespace.clone(),
            to: t.tablespace.clone(),
            bytes: t.bytes,
            indexes: indexes_of(t.oid, &index_target),
        });
    }
    (tables, parents)
}

/// Every valid index of a table: where it is, and where the plan sends it
/// (else where it is).
fn indexes_of(
    table: pg_sys::Oid,
    target: &dyn Fn(pg_sys::Oid) -> Option<String>,
) -> Vec<OnlineIndex> {
    rels(
        "JOIN pg_catalog.pg_index i ON i.indexrelid = c.oid WHERE i.indrelid = $1 AND i.indisvalid ORDER BY c.relname",
        vec![table.into()],
    )
    .into_iter()
    .map(|r| OnlineIndex {
        relation: r.oid.to_u32(),
        to: target(r.oid).unwrap_or_else(|| r.tablespace.clone()),
        name: r.qualified,
        from: r.tablespace,
        bytes: r.bytes,
    })
    .collect()
}

/// pg_repack's version, when both halves are here and agree: the
/// extension in this database and the program in the server's bin folder.
/// 1.4 runs for superusers only.
fn available_version() -> Version {
    let major = pg_sys::PG_MAJORVERSION_NUM;
    let package = format!("postgresql-{major}-repack");
    let ext = Spi::get_one_with_args::<String>(
        "SELECT (SELECT e.extversion::text FROM pg_catalog.pg_extension e WHERE e.extname = 'pg_repack')", &[],
    )
    .map_err(spi("reading pg_extension"))
    .or_raise();
    let Some(ext) = ext else {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            "pg_repack is not installed in this database: an online move runs it",
        )
        .with_hint(format!(
            "CREATE EXTENSION pg_repack (as a superuser), once the server has it (Debian and PGDG: apt install {package})."
        ))
        .raise()
    };
    let program = program();
    let out = std::process::Command::new(&program)
        .arg("--version")
        .output();
    let said = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        _ => Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "pg_repack's program is not at {}: the extension is installed, its client is not",
                program.display()
            ),
        )
        .with_hint(format!(
            "Install the server's pg_repack (Debian and PGDG: apt install {package})."
        ))
        .raise(),
    };
    let Some(version) = Version::parse(&said) else {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "{} --version printed no version: {}",
                program.display(),
                said.trim()
            ),
        )
        .raise()
    };
    if Version::parse(&ext) != Some(version) {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!("pg_repack's program is {version} and its extension in this database {ext}: pg_repack refuses to run so"),
        )
        .with_hint("ALTER EXTENSION pg_repack UPDATE, or DROP EXTENSION pg_repack and CREATE it again (it keeps no data).")
        .raise();
    }
    if !version.owner_may_run() && !is_superuser(current_user()) {
        Error::new(
            SqlState::InsufficientPrivilege,
            format!("pg_repack {version} runs for superusers only: role {} is not one", caller()),
        )
        .with_detail("pg_repack 1.5 lets a table's owner move it; 1.4's server functions refuse any other role.")
        .raise();
    }
    version
}

/// pg_repack of the server's own version, from the server's bin folder.
fn program() -> PathBuf {
    // SAFETY: my_exec_path is set at startup to the postgres executable.
    let exe = unsafe { std::ffi::CStr::from_ptr((&raw const pg_sys::my_exec_path).cast()) }
        .to_string_lossy()
        .into_owned();
    std::path::Path::new(&exe).with_file_name("pg_repack")
}

/// What pg_repack needs of a table it moves, refused with the reason.
fn check_table(t: &OnlineTable, version: Version) {
    let oid = pg_sys::Oid::from(t.relation);
    let facts = Spi::connect(|c| {
        let rows = c.select(
        "SELECT c.relpersistence::text,
                EXISTS (SELECT FROM pg_catalog.pg_index i
                         WHERE i.indrelid = c.oid AND i.indisvalid AND i.indisunique AND i.indimmediate
                           AND i.indpred IS NULL AND i.indexprs IS NULL
                           AND (i.indisprimary OR NOT EXISTS (
                                 SELECT FROM pg_catalog.pg_attribute a
                                  WHERE a.attrelid = c.oid AND a.attnum = ANY (i.indkey) AND NOT a.attnotnull))),
                (SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, ic.relname), ', ' ORDER BY ic.relname)
                   FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class ic ON ic.oid = i.indexrelid
                   JOIN pg_catalog.pg_namespace n ON n.oid = ic.relnamespace
                  WHERE i.indrelid = c.oid AND NOT i.indisvalid),
                EXISTS (SELECT FROM pg_catalog.pg_trigger g WHERE g.tgrelid = c.oid AND g.tgname = 'repack_trigger'),
                -- pg_repack's session lock on the table while it runs:
                -- pg_try_advisory_lock(16185446, -2147483648 + oid)
                (SELECT pg_catalog.min(l.pid) FROM pg_catalog.pg_locks l
                  WHERE l.locktype = 'advisory' AND l.classid = 16185446 AND l.objsubid = 2
                    AND l.objid = ((c.oid::int8 + 2147483648) % 4294967296)::oid
                    AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                       WHERE d.datname = pg_catalog.current_database()))
           FROM pg_catalog.pg_class c WHERE c.oid = $1",
        None,
        &[oid.into()],
        )?;
        let Some(r) = rows.into_iter().next() else {
            return Ok(None);
        };
        Ok::<_, pgrx::spi::Error>(Some((
            r.get::<String>(1)?,
            r.get::<bool>(2)?,
            r.get::<String>(3)?,
            r.get::<bool>(4)?,
            r.get::<i32>(5)?,
        )))
    })
    .map_err(spi("reading the catalog"))
    .or_raise();
    let Some((persistence, keyed, invalid_indexes, trigger, running)) = facts else {
        return;
    };
    match persistence.as_deref() {
        Some("p") => {}
        Some(p) => invalid(format!(
            "{} is {}: pg_repack moves permanent (logged) tables only",
            t.name,
            if p == "t" {
                "a temporary table"
            } else {
                "an unlogged table"
            }
        ))
        .with_hint("storlab.move() without online moves it, with ACCESS EXCLUSIVE for the copy.")
        .raise(),
        None => return,
    }
    if keyed != Some(true) {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "{} has no primary key and no unique index on NOT NULL columns: pg_repack needs one to replay the writes it logs during the copy",
                t.name
            ),
        )
        .with_hint("Add a primary key, or move it with storlab.move() without online (ACCESS EXCLUSIVE for the copy).")
        .raise();
    }
    if let Some(bad) = invalid_indexes {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "{} has invalid indexes, left by a failed CREATE INDEX CONCURRENTLY or REINDEX: {bad}",
                t.name
            ),
        )
        .with_detail("pg_repack leaves an invalid index out of the moved table: it would be gone afterwards.")
        .with_hint("DROP INDEX CONCURRENTLY each, or REINDEX INDEX CONCURRENTLY it, then move again.")
        .raise();
    }
    if let Some(pid) = running {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!("pg_repack runs on {} now (backend pid {pid})", t.name),
        )
        .with_hint("Wait for it to end, then move the table.")
        .raise();
    }
    if trigger == Some(true) {
        notice!(
            "storlab: an interrupted pg_repack run left its trigger on {} (every write is logged until it is removed): the job removes what that run left before it moves the table",
            t.name
        );
    }
    t.check_names(version).or_raise();
}

/// "table public.t (and its 2 indexes)" for the NOTICE.
fn what(tables: &[OnlineTable], parents: &[OnlineParent]) -> String {
    let moving: Vec<&str> = tables
        .iter()
        .filter(|t| t.moves())
        .map(|t| t.name.as_str())
        .collect();
    let indexes: usize = tables
        .iter()
        .map(|t| t.indexes.iter().filter(|i| i.from != i.to).count())
        .sum();
    let mut parts = Vec::new();
    if !moving.is_empty() {
        parts.push(format!("table {}", moving.join(", ")));
    }
    if indexes > 0 {
        parts.push(format!("{indexes} index(es)"));
    }
    if !parents.is_empty() {
        parts.push(format!("{} partitioned relation(s)", parents.len()));
    }
    parts.join(", ")
}

/// The rows the job will write, as a plan: not stored, no id or time.
fn plan_rows(
    tables: &[OnlineTable],
    parents: &[OnlineParent],
    lock_timeout: Duration,
    batch: Option<i64>,
    job: Option<i64>,
    label: Option<&str>,
    undoes: Option<i64>,
) -> Vec<RelocationRow> {
    let by = match job {
        Some(job) => format!("storlab job {job} moves it online"),
        None => "a dry run: nothing was started".to_string(),
    };
    let base = Relocation {
        batch_id: batch,
        moved_by: caller(),
        label: Some(label.unwrap_or(ONLINE_LABEL).to_string()),
        system_identifier: system_identifier(),
        hostname: hostname(),
        undoes_batch: undoes,
        online: true,
        ..Default::default()
    };
    let mut rows = Vec::new();
    for t in tables {
        let run = repack::Run {
            table: &t.name,
            tablespace: &t.to,
            move_indexes: t.repack_moves_indexes(),
            lock_timeout_ms: lock_timeout.as_millis() as u64,
        };
        if t.moves() {
            rows.push(Relocation {
                relation: t.relation,
                relation_name: t.name.clone(),
                kind: "table".into(),
                from_tablespace: t.from.clone(),
                to_tablespace: t.to.clone(),
                bytes: Some(t.bytes),
                statement: run.statement(),
                note: Some(format!(
                    "{by} through pg_repack: writes go on; its exclusive lock (to install its trigger, to swap, to drop) is queued {} ms at most each time, then the job stops it (55P03): a writer waits at most that plus the time the lock is held; {} to copy, and its indexes rebuilt",
                    repack::queued_budget_ms(lock_timeout.as_millis() as u64),
                    human_bytes(t.bytes)
                )),
                ..base.clone()
            });
            if run.move_indexes {
                for i in t.indexes.iter().filter(|i| i.from != t.to) {
                    rows.push(Relocation {
                        relation: i.relation,
                        relation_name: i.name.clone(),
                        kind: "index".into(),
                        from_tablespace: i.from.clone(),
                        to_tablespace: t.to.clone(),
                        bytes: Some(i.bytes),
                        statement: run.statement(),
                        note: Some(format!(
                            "{by}: rebuilt by the pg_repack run of its table {} (--moveidx)",
                            t.name
                        )),
                        ..base.clone()
                    });
                }
            }
        }
        for i in t.reindexed() {
            rows.push(Relocation {
                relation: i.relation,
                relation_name: i.name.clone(),
                kind: "index".into(),
                from_tablespace: i.from.clone(),
                to_tablespace: i.to.clone(),
                bytes: Some(i.bytes),
                statement: format!(
                    "REINDEX (TABLESPACE {}) INDEX CONCURRENTLY {}",
                    ident(&i.to),
                    i.name
                ),
                note: Some(format!(
                    "{by}: rebuilt concurrently{}: writes go on, with brief locks at start and end",
                    if t.moves() {
                        " after its table's pg_repack run"
                    } else {
                        ""
                    }
                )),
                ..base.clone()
            });
        }
    }
    for p in parents {
        let kind = if p.kind == "partitioned index" {
            Kind::PartitionedIndex
        } else {
            Kind::PartitionedTable
        };
        rows.push(Relocation {
            relation: p.relation,
            relation_name: p.name.clone(),
            kind: p.kind.clone(),
            from_tablespace: p.from.clone(),
            to_tablespace: p.to.clone(),
            bytes: Some(0),
            statement: statement(kind, &p.name, &ident(&p.to)).unwrap_or_default(),
            note: Some(format!(
                "{by}: a change of the catalog only (where new partitions go), after its partitions moved; its exclusive lock is tried 100 ms at a time"
            )),
            online: false,
            ..base.clone()
        });
    }
    rows.into_iter()
        .map(|r| {
            as_owner(|| {
                Spi::connect(|c| {
                    c.select(&Relocation::row_sql(), None, &[JsonB(r.to_json()).into()])?
                        .first()
                        .get_one::<RelocationRow>()
                })
            })
            .map_err(spi("describing the plan"))
            .or_raise()
            .expect("one row")
        })
        .collect()
}
