//! pg_repack as storlab drives it for an online table move: its version and
//! what that version allows, its command line, and what its output says
//! (the phase it is in, a lock it gave up on), and what a run's end means
//! for the job (`outcome`: moved, or the error that says why not). Pure:
//! the job that runs it is `src/jobs/move_online/`.
//!
//! pg_repack moves a table while writes go on: a trigger logs every change
//! into `repack.log_<oid>`, the rows are copied into `repack.table_<oid>` in
//! the target tablespace, the indexes are built there, the log is replayed,
//! and the two tables swap their files under a short ACCESS EXCLUSIVE lock.
//! It takes that lock three times (to install the trigger, to swap, to drop
//! its objects), each time with `lock_timeout` 100 ms, 200 ms, ... up to
//! 1 s per attempt, retrying until `--wait-timeout` seconds have passed;
//! with `--no-kill-backend` it then gives up instead of cancelling and
//! terminating the sessions in its way. A queued ACCESS EXCLUSIVE request
//! blocks every newcomer on the table, so a writer waits at most one attempt
//! (1 s) plus the time the lock is held.

use std::ffi::OsString;
use std::fmt;

use crate::pgbench::{conninfo, Connection};

pub mod outcome;

/// pg_repack waits at most this long for one attempt at its exclusive lock
/// (`Min(1000, i * 100)` ms in its lock_exclusive()): the longest a writer
/// queues behind one of its requests.
pub const LONGEST_ATTEMPT_MS: u64 = 1000;

/// How long one transaction may keep pg_repack's attempts at one exclusive
/// lock queued before storlab stops it: the call's lock_timeout, at most
/// one longest attempt (1 s). pg_repack retries its attempts back to back,
/// and every writer that arrives during an attempt queues behind it:
/// behind a long transaction, retries until `--wait-timeout` would leave
/// the writers almost stopped for that long. Short transactions that each
/// outlast an attempt (a busy, slow machine) let go, and pg_repack gets
/// its lock within `--wait-timeout` or gives up by itself.
pub fn queued_budget_ms(lock_timeout_ms: u64) -> u64 {
    lock_timeout_ms.min(LONGEST_ATTEMPT_MS)
}

/// A pg_repack version, as `pg_repack --version` and `repack.version()`
/// print it ("pg_repack 1.4.8").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl Version {
    /// The first `N.N[.N]` in `text`.
    pub fn parse(text: &str) -> Option<Version> {
        let word = text
            .split_whitespace()
            .find(|w| w.starts_with(|c: char| c.is_ascii_digit()))?;
        let mut parts = word
            .trim_end_matches(|c: char| !c.is_ascii_digit())
            .split('.');
        let major = parts.next()?.parse().ok()?;
        let minor = parts.next()?.parse().ok()?;
        let patch = parts.next().map_or(Some(0), |p| {
            p.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        })?;
        Some(Version {
            major,
            minor,
            patch,
        })
    }

    /// 1.4's server functions refuse every role but a superuser; from 1.5
    /// they check that the caller owns the table, and the client skips its
    /// own superuser check with `--no-superuser-check`.
    pub fn owner_may_run(self) -> bool {
        (self.major, self.minor) >= (1, 5)
    }

    /// From 1.5 the second session holds SHARE UPDATE EXCLUSIVE on the
    /// table from its setup to its swap, which keeps autovacuum off the
    /// table; 1.4's holds ACCESS SHARE, so an autovacuum may start during
    /// the copy and hold up the swap (PostgreSQL cancels it only for a lock
    /// request that waits deadlock_timeout, longer than pg_repack's
    /// attempts).
    pub fn keeps_autovacuum_out(self) -> bool {
        (self.major, self.minor) >= (1, 5)
    }

    /// Up to 1.5.0 pg_repack pastes its connection string together
    /// (`dbname=%s host=%s ...`) for PQconnectdb; from 1.5.1 it hands each
    /// value to PQconnectdbParams, expanding only the database name as a
    /// connection string.
    pub fn connects_with_params(self) -> bool {
        self >= Version {
            major: 1,
            minor: 5,
            patch: 1,
        }
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// `--wait-timeout` for a lock_timeout: whole seconds, rounded up, at least
/// one. pg_repack compares whole seconds (`time(NULL) - start > wait`), so
/// it gives up between that and a second later.
pub fn wait_timeout_s(lock_timeout_ms: u64) -> u64 {
    lock_timeout_ms.div_ceil(1000).max(1)
}

/// One pg_repack run: a table to a tablespace.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// schema-qualified and quoted as PostgreSQL quotes it (`--table` is
    /// read with `::regclass`)
    pub table: &'a str,
    /// the tablespace's name, unquoted (pg_repack quotes it)
    pub tablespace: &'a str,
    /// `--moveidx`: every index goes along; without it each index is
    /// rebuilt in the tablespace it is in
    pub move_indexes: bool,
    pub lock_timeout_ms: u64,
}

impl Run<'_> {
    /// The options that say what the run does, as storlab.relocations
    /// records them (no connection, no password).
    pub fn options(&self) -> Vec<String> {
        let mut o = vec![
            format!("--table={}", self.table),
            format!("--tablespace={}", self.tablespace),
        ];
        if self.move_indexes {
            o.push("--moveidx".into());
        }
        o.push("--no-kill-backend".into());
        o.push(format!(
            "--wait-timeout={}",
            wait_timeout_s(self.lock_timeout_ms)
        ));
        o
    }

    /// The statement storlab.relocations records for the run: a command
    /// line a shell reads as the run's arguments (an argument with anything
    /// but plain characters single-quoted), so that a name holding `;` or
    /// a space pasted into a shell runs nothing else.
    pub fn statement(&self) -> String {
        let words: Vec<String> = self.options().iter().map(|o| shell_word(o)).collect();
        format!("pg_repack {}", words.join(" "))
    }

    /// The whole command line. `--echo` prints each statement as it is
    /// sent: the job reads the phase from it. The connection's values are
    /// given so that each is read as one value, never as more keywords: up
    /// to 1.5.0 pg_repack pastes them into a connection string, so each is
    /// quoted as a connection string value; from 1.5.1 each is a parameter
    /// of its own, and only the database name is read as a connection
    /// string (`dbname='...'`).
    pub fn args(&self, version: Version, conn: &Connection) -> Vec<OsString> {
        let mut args: Vec<OsString> = self.options().into_iter().map(OsString::from).collect();
        args.push("--echo".into());
        if version.owner_may_run() {
            // the server functions check ownership themselves
            args.push("--no-superuser-check".into());
        }
        let params = version.connects_with_params();
        let value = |v: &str| {
            if params {
                v.to_string()
            } else {
                conninfo::quote(v)
            }
        };
        if let Some(h) = &conn.host {
            args.push(format!("--host={}", value(h)).into());
        }
        if let Some(p) = conn.port {
            args.push(format!("--port={p}").into());
        }
        if let Some(u) = &conn.user {
            args.push(format!("--username={}", value(u)).into());
        }
        args.push("--no-password".into());
        let dbname = if params {
            format!("dbname={}", conninfo::quote(&conn.dbname))
        } else {
            conninfo::quote(&conn.dbname)
        };
        args.push(format!("--dbname={dbname}").into());
        args
    }
}

/// One argument as a POSIX shell reads it back: as is when it holds only
/// plain characters, else single-quoted (a `'` as `'\''`).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-./=:,@%+".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// Where a pg_repack run is, from what it has echoed so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// connecting, reading the table's definition
    Starting,
    /// waiting for (or holding) ACCESS EXCLUSIVE to install its trigger
    SetupLock,
    /// the log table and trigger are in place; writes are logged
    Setup,
    /// copying the rows into the new table in the target tablespace
    Copy,
    /// building the indexes on the new table
    IndexBuild,
    /// replaying the changes logged since the copy began
    LogReplay,
    /// waiting for transactions older than the copy to end
    WaitingForOldTransactions,
    /// waiting for (or holding) ACCESS EXCLUSIVE to swap the tables' files
    Swap,
    /// the swap is committed: dropping the log table, trigger and old files
    Drop,
    /// ANALYZE of the moved table
    Analyze,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Starting => "starting",
            Phase::SetupLock => "setup: taking the exclusive lock to install the log trigger",
            Phase::Setup => "setup: log table and trigger",
            Phase::Copy => "copy",
            Phase::IndexBuild => "index build",
            Phase::LogReplay => "log replay",
            Phase::WaitingForOldTransactions => {
                "log replay: waiting for transactions older than the copy"
            }
            Phase::Swap => "swap: taking the exclusive lock to swap the files",
            Phase::Drop => "drop: removing the log table, trigger and old files",
            Phase::Analyze => "analyze",
        }
    }

    /// Does pg_repack take or hold ACCESS EXCLUSIVE on the table in this
    /// phase (the only phases in which it can block the table's writers)?
    pub fn exclusive(self) -> bool {
        matches!(
            self,
            Phase::Starting | Phase::SetupLock | Phase::Setup | Phase::Swap | Phase::Drop
        )
    }

    /// Which of pg_repack's three exclusive locks this phase takes or holds:
    /// 1 the setup's (to install its trigger), 2 the swap's, 3 the drop's.
    pub fn exclusive_lock(self) -> Option<u8> {
        match self {
            Phase::Starting | Phase::SetupLock | Phase::Setup => Some(1),
            Phase::Swap => Some(2),
            Phase::Drop => Some(3),
            _ => None,
        }
    }

    /// Has the swap committed, so that the table is where it was sent?
    pub fn swapped(self) -> bool {
        matches!(self, Phase::Drop | Phase::Analyze)
    }
}

/// The phase of a run from its `--echo` output so far (stderr).
pub fn phase(echo: &str) -> Phase {
    let mut t = PhaseTracker::default();
    t.feed(echo);
    t.finish()
}

/// The phase of a run followed as its `--echo` output grows: fed what was
/// appended since the last look (a line cut in two waits for its end). The
/// statements come in a fixed order; the last one that names a phase wins,
/// except that the exclusive lock means setup before the copy and the swap
/// (then the drop) after it.
#[derive(Debug, Clone)]
pub struct PhaseTracker {
    phase: Phase,
    copied: bool,
    gave_up: bool,
    partial: String,
}

impl Default for PhaseTracker {
    fn default() -> Self {
        PhaseTracker {
            phase: Phase::Starting,
            copied: false,
            gave_up: false,
            partial: String::new(),
        }
    }
}

impl PhaseTracker {
    /// Reads `chunk` (whole lines, and the start of one); returns the phase.
    pub fn feed(&mut self, chunk: &str) -> Phase {
        self.partial.push_str(chunk);
        while let Some(end) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=end).collect();
            self.line(line.trim_end_matches('\n'));
        }
        self.phase
    }

    /// The phase once the output is complete (a last line without its
    /// newline counts).
    pub fn finish(&mut self) -> Phase {
        let rest = std::mem::take(&mut self.partial);
        self.line(&rest);
        self.phase
    }

    /// Has pg_repack given up on an exclusive lock (`--no-kill-backend`
    /// after `--wait-timeout`)? It then removes its objects, and 1.4
    /// retries that removal, reconnecting, until it gets its lock.
    pub fn gave_up(&self) -> bool {
        self.gave_up
    }

    fn line(&mut self, line: &str) {
        if line.starts_with("WARNING: timed out, do not cancel conflicting backends")
            || (line.starts_with("INFO: Skipping repack") && line.contains("due to timeout"))
        {
            self.gave_up = true;
        }
        let Some(q) = line
            .strip_prefix("LOG: (query) ")
            .or_else(|| line.strip_prefix("NOTICE: "))
        else {
            return;
        };
        let phase = self.phase;
        let next = if q.starts_with("LOCK TABLE") && q.ends_with("IN ACCESS EXCLUSIVE MODE") {
            match (self.copied, phase) {
                (false, _) => Phase::SetupLock,
                // the lock before the drop, once the swap committed
                (true, p) if p.swapped() => Phase::Drop,
                (true, _) => Phase::Swap,
            }
        } else if q.starts_with("SELECT repack.create_log_table")
            || q.starts_with("CREATE TRIGGER repack_trigger")
        {
            Phase::Setup
        } else if q.starts_with("SELECT repack.create_table")
            || q.starts_with("CREATE TABLE repack.table_")
            || q.starts_with("INSERT INTO repack.table_")
        {
            self.copied = true;
            Phase::Copy
        } else if q.starts_with("CREATE UNIQUE INDEX index_")
            || q.starts_with("CREATE INDEX index_")
        {
            Phase::IndexBuild
        } else if q.starts_with("SELECT repack.repack_apply") {
            // the last replay runs under the swap's lock
            if phase == Phase::Swap {
                Phase::Swap
            } else {
                Phase::LogReplay
            }
        } else if q.starts_with("Waiting for") && q.contains("transactions to finish") {
            Phase::WaitingForOldTransactions
        } else if q.starts_with("SELECT repack.repack_swap") {
            Phase::Swap
        } else if q.starts_with("COMMIT") && phase == Phase::Swap {
            // the swap's transaction committed
            Phase::Drop
        } else if q.starts_with("SELECT repack.repack_drop") && self.copied {
            Phase::Drop
        } else if q.starts_with("ANALYZE") {
            Phase::Analyze
        } else {
            return;
        };
        self.phase = next;
    }
}

/// What pg_repack said of a run that did not move the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// it gave up on its exclusive lock after `--wait-timeout`
    LockTimeout,
    /// its own words (an ERROR or WARNING line), for the job's error
    Said(String),
}

/// Why the run in `output` (stdout and stderr) did not move its table, as
/// far as pg_repack said: a lock it gave up on, else its first ERROR, else
/// its first WARNING (it skips a table with a WARNING and exits 0).
pub fn refusal(output: &str) -> Option<Refusal> {
    let lines: Vec<&str> = output
        .lines()
        .filter(|l| !l.starts_with("LOG: ") && !l.starts_with("INFO: repacking"))
        .collect();
    if lines.iter().any(|l| {
        l.contains("due to timeout") || l.contains("timed out, do not cancel conflicting backends")
    }) {
        return Some(Refusal::LockTimeout);
    }
    let first = |prefix: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(prefix))
            .map(|l| Refusal::Said(l.trim().to_string()))
    };
    first("ERROR: ").or_else(|| first("WARNING: "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn versions_read_as_pg_repack_prints_them() {
        assert_eq!(
            v("pg_repack 1.4.8"),
            Version {
                major: 1,
                minor: 4,
                patch: 8
            }
        );
        assert_eq!(
            v("1.5.3"),
            Version {
                major: 1,
                minor: 5,
                patch: 3
            }
        );
        assert_eq!(
            v("pg_repack 1.5"),
            Version {
                major: 1,
                minor: 5,
                patch: 0
            }
        );
        assert_eq!(
            v("pg_repack 1.5.2-1"),
            Version {
                major: 1,
                minor: 5,
                patch: 2
            }
        );
        assert_eq!(Version::parse("pg_repack"), None);
        assert_eq!(v("pg_repack 1.4.8").to_string(), "1.4.8");
        assert!(!v("1.4.8").owner_may_run());
        assert!(v("1.5.0").owner_may_run());
        assert!(v("2.0.0").owner_may_run());
        assert!(!v("1.4.8").keeps_autovacuum_out());
        assert!(v("1.5.0").keeps_autovacuum_out());
    }

    #[test]
    fn the_queued_budget_is_the_lock_timeout_up_to_one_attempt() {
        assert_eq!(queued_budget_ms(200), 200);
        assert_eq!(queued_budget_ms(1000), 1000);
        assert_eq!(queued_budget_ms(5000), 1000);
    }

    #[test]
    fn wait_timeouts_are_whole_seconds_rounded_up() {
        assert_eq!(wait_timeout_s(1), 1);
        assert_eq!(wait_timeout_s(1000), 1);
        assert_eq!(wait_timeout_s(1001), 2);
        assert_eq!(wait_timeout_s(5000), 5);
    }

    fn conn() -> Connection {
        Connection {
            host: Some("/var/run/pg sock".into()),
            port: Some(5432),
            user: Some("o'neil".into()),
            dbname: "my db host=evil".into(),
        }
    }

    #[test]
    fn the_command_line_quotes_every_connection_value() {
        let run = Run {
            table: "public.\"Big\"",
            tablespace: "fast",
            move_indexes: true,
            lock_timeout_ms: 1500,
        };
        let args = |version: &str| -> Vec<String> {
            run.args(v(version), &conn())
                .into_iter()
                .map(|a| a.into_string().unwrap())
                .collect()
        };
        // 1.5.1 and later: each value a parameter, the database name
        // expanded as a connection string
        assert_eq!(
            args("1.5.3"),
            [
                "--table=public.\"Big\"",
                "--tablespace=fast",
                "--moveidx",
                "--no-kill-backend",
                "--wait-timeout=2",
                "--echo",
                "--no-superuser-check",
                "--host=/var/run/pg sock",
                "--port=5432",
                "--username=o'neil",
                "--no-password",
                "--dbname=dbname='my db host=evil'",
            ]
        );
        // 1.4 pastes a connection string together: every value quoted; and
        // it checks for a superuser on the server, no client option helps
        let old = args("1.4.8");
        assert!(!old.iter().any(|a| a == "--no-superuser-check"));
        assert_eq!(
            old[6..],
            [
                "--host='/var/run/pg sock'",
                "--port=5432",
                "--username='o\\'neil'",
                "--no-password",
                "--dbname='my db host=evil'",
            ]
        );
        assert!(!v("1.5.0").connects_with_params());
        assert!(v("1.5.1").connects_with_params());
        assert_eq!(
            run.statement(),
            "pg_repack '--table=public.\"Big\"' --tablespace=fast --moveidx --no-kill-backend --wait-timeout=2"
        );
        let odd = Run {
            table: "s.\"My \"\"Tab\"\" 1; drop\"",
            tablespace: "it's; rm",
            ..run.clone()
        };
        assert_eq!(
            odd.statement(),
            "pg_repack '--table=s.\"My \"\"Tab\"\" 1; drop\"' '--tablespace=it'\\''s; rm' --moveidx --no-kill-backend --wait-timeout=2"
        );
        let stay = Run {
            move_indexes: false,
            ..run
        };
        assert!(!stay.options().iter().any(|o| o == "--moveidx"));
    }

    /// What pg_repack 1.5.3 echoed for a move of pgbench_accounts while
    /// pgbench wrote to it (parameters left out).
    const ECHO: &str = "\
LOG: (query) select repack.version(), repack.version_sql()
INFO: repacking table \"public.pgbench_accounts\"
LOG: (query) SELECT pg_try_advisory_lock($1, CAST(-2147483648 + $2::bigint AS integer))
LOG: (query) BEGIN ISOLATION LEVEL READ COMMITTED
LOG: (query) SET LOCAL lock_timeout = 100
LOG: (query) LOCK TABLE public.pgbench_accounts IN ACCESS EXCLUSIVE MODE
LOG: (query) SELECT repack.create_index_type(17039,17023)
LOG: (query) SELECT repack.create_log_table(17023)
LOG: (query) CREATE TRIGGER repack_trigger AFTER INSERT OR DELETE OR UPDATE ON public.pgbench_accounts FOR EACH ROW EXECUTE PROCEDURE repack.repack_trigger('aid')
LOG: (query) COMMIT
LOG: (query) BEGIN ISOLATION LEVEL SERIALIZABLE
LOG: (query) LOCK TABLE public.pgbench_accounts IN ACCESS SHARE MODE
LOG: (query) SELECT repack.create_table($1, $2)
LOG: (query) INSERT INTO repack.table_17023 SELECT aid,bid,abalance,filler FROM ONLY public.pgbench_accounts
LOG: (query) COMMIT
LOG: (query) CREATE UNIQUE INDEX index_17039 ON repack.table_17023 USING btree (aid) TABLESPACE lab_ext4
LOG: (query) SELECT repack.repack_apply($1, $2, $3, $4, $5, $6)
NOTICE: Waiting for 1 transactions to finish. First PID: 4242
LOG: (query) SELECT repack.repack_apply($1, $2, $3, $4, $5, $6)
LOG: (query) SELECT pid FROM pg_locks WHERE locktype = 'virtualxid' AND pid <> pg_backend_pid() AND virtualtransaction = ANY($1)
LOG: (query) SET LOCAL lock_timeout = 100
LOG: (query) LOCK TABLE public.pgbench_accounts IN ACCESS EXCLUSIVE MODE
LOG: (query) LOCK TABLE repack.table_17023 IN ACCESS EXCLUSIVE MODE
LOG: (query) SELECT repack.repack_apply($1, $2, $3, $4, $5, $6)
LOG: (query) SELECT repack.repack_swap($1)
LOG: (query) COMMIT
LOG: (query) BEGIN ISOLATION LEVEL READ COMMITTED
LOG: (query) LOCK TABLE public.pgbench_accounts IN ACCESS EXCLUSIVE MODE
LOG: (query) SELECT repack.repack_drop($1, $2)
LOG: (query) COMMIT
LOG: (query) BEGIN ISOLATION LEVEL READ COMMITTED
LOG: (query) ANALYZE public.pgbench_accounts
LOG: (query) COMMIT
";

    /// The phase after each prefix of the run's output.
    fn phase_after(marker: &str) -> Phase {
        let end = ECHO.find(marker).expect(marker) + marker.len();
        let line_end = ECHO[end..].find('\n').map_or(ECHO.len(), |i| end + i);
        phase(&ECHO[..line_end])
    }

    #[test]
    fn phases_follow_the_echoed_statements() {
        assert_eq!(phase(""), Phase::Starting);
        assert_eq!(phase_after("repack.version()"), Phase::Starting);
        assert_eq!(phase_after("SET LOCAL lock_timeout = 100\nLOG: (query) LOCK TABLE public.pgbench_accounts IN ACCESS EXCLUSIVE MODE"), Phase::SetupLock);
        assert_eq!(phase_after("create_log_table"), Phase::Setup);
        assert_eq!(phase_after("IN ACCESS SHARE MODE"), Phase::Setup);
        assert_eq!(phase_after("INSERT INTO repack.table_"), Phase::Copy);
        assert_eq!(phase_after("CREATE UNIQUE INDEX"), Phase::IndexBuild);
        assert_eq!(phase_after("SELECT repack.repack_apply"), Phase::LogReplay);
        assert_eq!(
            phase_after("Waiting for 1"),
            Phase::WaitingForOldTransactions
        );
        assert_eq!(phase_after("virtualtransaction = ANY"), Phase::LogReplay);
        assert_eq!(phase_after("LOCK TABLE repack.table_17023"), Phase::Swap);
        assert_eq!(phase_after("repack_swap"), Phase::Swap);
        assert!(!Phase::Swap.swapped());
        assert!(Phase::Swap.exclusive() && Phase::SetupLock.exclusive() && Phase::Drop.exclusive());
        assert!(
            !Phase::Copy.exclusive()
                && !Phase::IndexBuild.exclusive()
                && !Phase::LogReplay.exclusive()
        );
        assert_eq!(
            phase_after("repack_swap($1)\nLOG: (query) COMMIT"),
            Phase::Drop
        );
        assert_eq!(phase_after("repack_drop"), Phase::Drop);
        assert!(Phase::Drop.swapped());
        assert_eq!(phase(ECHO), Phase::Analyze);
    }

    fn t_gave_up(echo: &str) -> bool {
        let mut t = PhaseTracker::default();
        t.feed(echo);
        t.gave_up()
    }

    #[test]
    fn the_tracker_reads_output_as_it_grows() {
        // cut anywhere, even inside a line: the same phases (each chunk
        // shorter than a line, so that no phase passes unseen)
        for cut in [1, 7, 13] {
            let mut t = PhaseTracker::default();
            let mut seen = vec![];
            let bytes = ECHO.as_bytes();
            for chunk in bytes.chunks(cut) {
                let p = t.feed(std::str::from_utf8(chunk).unwrap());
                if seen.last() != Some(&p) {
                    seen.push(p);
                }
            }
            assert_eq!(
                seen,
                [
                    Phase::Starting,
                    Phase::SetupLock,
                    Phase::Setup,
                    Phase::Copy,
                    Phase::IndexBuild,
                    Phase::LogReplay,
                    Phase::WaitingForOldTransactions,
                    Phase::LogReplay,
                    Phase::Swap,
                    Phase::Drop,
                    Phase::Analyze
                ],
                "chunks of {cut}"
            );
        }
        assert!(!t_gave_up(ECHO));
        assert!(t_gave_up(
            "LOG: (query) LOCK TABLE public.c IN ACCESS EXCLUSIVE MODE\nWARNING: timed out, do not cancel conflicting backends\n"
        ));
        // a last line without its newline counts once the output is whole
        let mut t = PhaseTracker::default();
        assert_eq!(t.feed("LOG: (query) ANALYZE public.t"), Phase::Starting);
        assert_eq!(t.finish(), Phase::Analyze);
    }

    #[test]
    fn a_run_that_gave_up_on_its_lock_says_so() {
        let out = "INFO: repacking table \"public.t\"\nWARNING: timed out, do not cancel conflicting backends\nINFO: Skipping repack public.t due to timeout\n";
        assert_eq!(refusal(out), Some(Refusal::LockTimeout));
        assert_eq!(refusal(ECHO), None);
        let no_key =
            "WARNING: relation \"public.t\" must have a primary key or not-null unique keys\n";
        assert_eq!(
            refusal(no_key),
            Some(Refusal::Said(
                "relation \"public.t\" must have a primary key or not-null unique keys".into()
            ))
        );
        let both = "WARNING: skipping invalid index: CREATE INDEX ...\nERROR: query failed: ERROR:  permission denied\n";
        assert_eq!(
            refusal(both),
            Some(Refusal::Said(
                "query failed: ERROR:  permission denied".into()
            ))
        );
    }
}
