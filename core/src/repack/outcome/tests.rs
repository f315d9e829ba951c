//! One test per outcome, each with the words a user reads spelled out
//! whole: these texts reach CALL storlab.wait's error, and the suites
//! compare them.

use super::*;

const TIDY_LATER: &str = "pg_repack's objects could not be removed within lock_timeout: trigger repack_trigger on public.t, table repack.log_16400 (a lock on the table is held by backend pid 7 (client backend)); every write to the table is logged into them until they go: the job's worker removes them as soon as the sessions holding a lock on the table let go (for up to 15 min after the job ends; storlab.jobs' detail->'tidy' says when), and the next online move of the table removes them first; by hand: SELECT repack.repack_drop('public.t'::regclass, 4)";

const STALL: &str = "Meanwhile the table's writers waited for a lock 0.250 s at most, and some writer was waiting during 1.500 s in all";

/// A run of public.t from fast into slow that did not move it, left
/// nothing, was not stopped and found no one in its way.
fn end() -> RunEnd {
    RunEnd {
        table: "public.t".into(),
        to: "slow".into(),
        from: "fast".into(),
        now: Some("fast".into()),
        lock_timeout_ms: 2000,
        version: Version::parse("pg_repack 1.5.2").unwrap(),
        stopped: None,
        left: Vec::new(),
        said: String::new(),
        last_phase: Phase::Copy,
        behind: None,
        held_by: None,
        others_max_s: 0.25,
        others_total_s: 1.5,
        holders: None,
    }
}

fn left(mut e: RunEnd) -> RunEnd {
    e.left = vec![
        "trigger repack_trigger on public.t".into(),
        "table repack.log_16400".into(),
    ];
    e.holders = Some("backend pid 7 (client backend)".into());
    e
}

fn refused(o: Outcome) -> Error {
    match o {
        Outcome::Refused(e) => e,
        other => panic!("not refused: {other:?}"),
    }
}

#[test]
fn moved_and_tidy_is_done() {
    let e = RunEnd {
        now: Some("slow".into()),
        ..end()
    };
    assert_eq!(e.outcome(), Outcome::Moved);
    assert!(!e.names_holders());
    assert!(!e.tidied_later());
}

#[test]
fn moved_with_objects_left_is_55000_and_tidied_later() {
    let e = left(RunEnd {
        now: Some("slow".into()),
        ..end()
    });
    assert!(e.names_holders());
    assert!(e.tidied_later());
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55000");
    assert_eq!(
        err.message,
        format!("table public.t moved to slow, but {TIDY_LATER}")
    );
    assert_eq!(err.detail, None);
    assert_eq!(err.hint, None);
}

#[test]
fn a_stop_request_says_where_the_table_is() {
    let e = RunEnd {
        stopped: Some("cancelled with storlab.cancel()".into()),
        ..end()
    };
    assert_eq!(
        e.outcome(),
        Outcome::Stopped(
            "cancelled with storlab.cancel(); public.t is where it was, in fast; pg_repack's objects are removed".into()
        )
    );
    // swapped before the stop: recorded as moved
    let e = RunEnd {
        now: Some("slow".into()),
        ..e
    };
    assert_eq!(
        e.outcome(),
        Outcome::Stopped(
            "cancelled with storlab.cancel(); public.t had been swapped into slow already, and is recorded as moved; pg_repack's objects are removed".into()
        )
    );
}

#[test]
fn a_stop_request_leaves_no_tidying_to_the_worker() {
    let e = left(RunEnd {
        stopped: Some("stopped by a signal".into()),
        ..end()
    });
    assert!(!e.tidied_later(), "a stopped worker must exit");
    assert_eq!(
        e.outcome(),
        Outcome::Stopped(
            "stopped by a signal; public.t is where it was, in fast; pg_repack's objects could not be removed within lock_timeout: trigger repack_trigger on public.t, table repack.log_16400 (a lock on the table is held by backend pid 7 (client backend)); every write to the table is logged into them until they go: the next online move of the table removes them first; by hand: SELECT repack.repack_drop('public.t'::regclass, 4)".into()
        )
    );
}

#[test]
fn a_session_queued_behind_pg_repack_is_55p03_naming_it() {
    let e = RunEnd {
        behind: Some((
            "backend pid 9 (client backend, running: ALTER TABLE t ADD c int)".into(),
            2.0004,
        )),
        ..end()
    };
    assert!(!e.names_holders());
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55P03");
    assert_eq!(
        err.message,
        "could not move table public.t online: backend pid 9 (client backend, running: ALTER TABLE t ADD c int) was queued for a lock on it behind pg_repack's for 2.000 s, over lock_timeout (2000 ms), and every writer of the table queues behind such a request, so the job stopped pg_repack (it cancels no one)"
    );
    assert_eq!(
        err.detail.unwrap(),
        format!("pg_repack's sessions ended, so that session's request waits for them no more. The table is where it was, in fast; pg_repack's objects are removed. {STALL}. Move the table again once that session is done.")
    );
}

#[test]
fn a_transaction_that_does_not_let_go_is_55p03_naming_its_holders() {
    let e = RunEnd {
        held_by: Some("backend pid 11 (client backend)".into()),
        last_phase: Phase::Swap,
        lock_timeout_ms: 5000,
        ..end()
    };
    assert!(!e.names_holders(), "the watcher read them already");
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55P03");
    assert_eq!(
        err.message,
        "could not lock table public.t without holding up its writers: pg_repack's exclusive lock (swap: taking the exclusive lock to swap the files) was queued for over 1000 ms behind a transaction that does not let go, so the job stopped it (it cancels no one)"
    );
    assert_eq!(
        err.detail.unwrap(),
        format!("Held by: backend pid 11 (client backend). Every writer that arrives queues behind a queued ACCESS EXCLUSIVE request: pg_repack's retries would have held them up for up to lock_timeout. The table is where it was, in fast; pg_repack's objects are removed. {STALL}.")
    );
}

#[test]
fn an_autovacuum_in_the_way_is_named_with_what_to_do() {
    let held = |version: &str| {
        let e = RunEnd {
            held_by: Some("backend pid 12 (autovacuum worker)".into()),
            version: Version::parse(version).unwrap(),
            ..end()
        };
        refused(e.outcome()).detail.unwrap()
    };
    let said = " An autovacuum of the table is in the way: PostgreSQL cancels one only for a lock request that waits deadlock_timeout, longer than pg_repack's attempts";
    assert!(held("1.5.2").contains(&format!(
        "{said}. VACUUM the table (it is then not due for one) and move it again. Every writer"
    )));
    assert!(held("1.4.8").contains(&format!(
        "{said}, and pg_repack 1.4.8 lets one start during its copy. VACUUM the table"
    )));
}

#[test]
fn pg_repack_giving_up_on_its_lock_is_55p03_naming_the_holders() {
    let e = RunEnd {
        said: "WARNING: timed out, do not cancel conflicting backends\n".into(),
        holders: Some("backend pid 7 (client backend)".into()),
        ..end()
    };
    assert!(e.names_holders());
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55P03");
    assert_eq!(
        err.message,
        "could not lock table public.t within lock_timeout (2000 ms): pg_repack gave up on its exclusive lock, and cancelled no one"
    );
    assert_eq!(
        err.detail.unwrap(),
        format!("Held by: backend pid 7 (client backend). The table is where it was, in fast; pg_repack's objects are removed. {STALL}.")
    );
}

#[test]
fn a_session_of_pg_repack_past_its_lock_timeout_is_55p03() {
    let e = RunEnd {
        said: "ERROR: query failed: ERROR:  canceling statement due to lock timeout\n".into(),
        ..end()
    };
    // "due to lock timeout" is no "due to timeout": pg_repack's words
    assert!(e.names_holders());
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55P03");
    assert_eq!(
        err.message,
        "could not move table public.t online: a session of pg_repack waited for a lock past lock_timeout (2000 ms): query failed: ERROR:  canceling statement due to lock timeout"
    );
    // no one holds a lock any more
    assert_eq!(
        err.detail.unwrap(),
        format!("Held by: no session any more. The table is where it was, in fast; pg_repack's objects are removed. {STALL}.")
    );
}

#[test]
fn pg_repack_refusing_in_its_own_words_is_55000() {
    let e = RunEnd {
        said: "WARNING: relation \"public.t\" must have a primary key or not-null unique keys\n"
            .into(),
        ..end()
    };
    assert!(!e.names_holders());
    let err = refused(e.outcome());
    assert_eq!(err.state.code(), "55000");
    assert_eq!(
        err.message,
        "pg_repack did not move table public.t: relation \"public.t\" must have a primary key or not-null unique keys"
    );
    assert_eq!(
        err.detail.unwrap(),
        "The table is where it was, in fast; pg_repack's objects are removed."
    );
}

#[test]
fn pg_repack_ending_without_a_word_fails_saying_where_the_table_is() {
    assert_eq!(
        end().outcome(),
        Outcome::Failed(
            "pg_repack ended without moving table public.t and without saying why (its last phase: copy); the table is in fast".into()
        )
    );
    let gone = RunEnd { now: None, ..end() };
    assert_eq!(
        gone.outcome(),
        Outcome::Failed(
            "pg_repack ended without moving table public.t and without saying why (its last phase: copy); the table is in no tablespace: it is gone".into()
        )
    );
}

#[test]
fn refusals_before_a_run() {
    let e = running_now("public.t", 4242, "fast");
    assert_eq!(e.state.code(), "55006");
    assert_eq!(
        e.message,
        "pg_repack runs on table public.t now (backend pid 4242)"
    );
    assert_eq!(
        e.detail.unwrap(),
        "Nothing was moved; the table is where it was, in fast."
    );
    let e = left_before(
        "public.\"it's\"",
        &["table repack.log_1".into(), "type repack.pk_1".into()],
    );
    assert_eq!(e.state.code(), "55000");
    assert_eq!(
        e.message,
        "an interrupted pg_repack run left its objects on table public.\"it's\": table repack.log_1, type repack.pk_1"
    );
    assert_eq!(
        e.detail.unwrap(),
        "They could not be dropped within lock_timeout: a session holds a lock on the table. Drop them with SELECT repack.repack_drop('public.\"it''s\"'::regclass, 4) once it ends; until then every write to the table is logged twice."
    );
}
