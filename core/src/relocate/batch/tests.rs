//! One test per decision of a batch's step, with the words a user reads
//! spelled out whole: the suites compare these texts.

use super::*;

const MB: i64 = 1024 * 1024;

fn table() -> Facts<'static> {
    Facts {
        kind: Kind::Table,
        qualified: "public.t",
        table: None,
        bytes: 3 * MB,
        logged: true,
        files_missing: false,
    }
}

fn after(fits: bool) -> SpaceAfter {
    SpaceAfter {
        free: 100 * MB as u64,
        copied: 9 * MB as u64,
        reserve: if fits { MB as u64 } else { 95 * MB as u64 },
    }
}

const LOCKED: &str = "holds ACCESS EXCLUSIVE on public.t from its copy of 3.0 MB until the call's transaction ends (the call copies 9.0 MB in all): every reader and writer of it waits";

#[test]
fn a_call_copies_only_relations_with_storage() {
    let steps = [
        (Kind::Table, 3 * MB),
        (Kind::PartitionedTable, 5 * MB),
        (Kind::Index, MB),
    ];
    assert_eq!(call_bytes(steps), 4 * MB);
    assert_eq!(call_bytes([]), 0);
}

#[test]
fn only_a_move_of_something_takes_a_batch() {
    assert!(takes_batch(false, 2));
    assert!(!takes_batch(true, 2));
    assert!(!takes_batch(false, 0));
}

#[test]
fn a_lock_not_taken_names_the_relation_and_its_holders() {
    let what = lock_target(Kind::Table, "public.t");
    assert_eq!(what, "table public.t");
    assert_eq!(
        toast_target("index", &what),
        "the TOAST index of table public.t"
    );
    let e = lock_refused(
        &what,
        Duration::from_millis(250),
        Some("backend pid 7 (client backend)".into()),
    );
    assert_eq!(e.state, SqlState::LockNotAvailable);
    assert_eq!(
        e.message,
        "could not lock table public.t within lock_timeout (250 ms): another session is using it"
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("Held by: backend pid 7 (client backend). Nothing was moved.")
    );
    assert_eq!(e.hint, None);
}

#[test]
fn a_lock_whose_holder_let_go_says_so() {
    let e = lock_refused("index public.i", Duration::from_secs(2), None);
    assert_eq!(
        e.message,
        "could not lock index public.i within lock_timeout (2000 ms): another session is using it"
    );
    assert_eq!(
        e.detail.as_deref(),
        Some("Held by: no session any more (it let go as storlab gave up). Nothing was moved.")
    );
}

#[test]
fn a_relation_dropped_while_waited_for_is_skipped() {
    assert_eq!(
        relocked("public.t", None, "slow"),
        Relocked::Skip(
            "storlab: public.t was dropped while storlab waited for it; nothing to move".into()
        )
    );
}

#[test]
fn a_relation_moved_meanwhile_is_skipped_under_its_name_now() {
    assert_eq!(
        relocked("public.t", Some(("public.u", "slow")), "slow"),
        Relocked::Skip(
            "storlab: public.u is already in slow (moved by another session meanwhile); nothing to move"
                .into()
        )
    );
}

#[test]
fn a_relation_still_elsewhere_moves() {
    assert_eq!(
        relocked("public.t", Some(("public.t", "fast")), "slow"),
        Relocked::Move
    );
}

#[test]
fn the_alter_gets_what_the_wait_left_of_lock_timeout() {
    let limit = Duration::from_millis(2000);
    assert_eq!(
        lock_timeout_left(limit, Duration::from_millis(500)),
        "1500ms"
    );
    // never 0, which would mean no limit at all
    assert_eq!(lock_timeout_left(limit, Duration::from_millis(2000)), "1ms");
    assert_eq!(lock_timeout_left(limit, Duration::from_secs(5)), "1ms");
    assert_eq!(
        lock_timeout_left(limit, Duration::from_micros(1_999_500)),
        "1ms"
    );
}

#[test]
fn a_move_notes_what_it_does_to_other_sessions() {
    let n = step_note(&table(), "slow", 9 * MB, None, false, Some(&after(true)));
    assert_eq!(
        n,
        StepNote {
            note: LOCKED.into(),
            onto_volatile: false,
            missing: None,
        }
    );
}

#[test]
fn a_relation_without_files_says_its_size_is_unknown() {
    let rel = Facts {
        files_missing: true,
        ..table()
    };
    let n = step_note(&rel, "slow", 9 * MB, None, false, Some(&after(true)));
    assert_eq!(n.note, "its files cannot be found: the size to copy is unknown, and ALTER ... SET TABLESPACE would fail (a tmpfs tablespace after a reboot?); the call copies 9.0 MB besides");
    assert_eq!(n.missing, None);
}

#[test]
fn a_dry_run_warns_of_a_relation_without_files_and_says_no_space() {
    let rel = Facts {
        files_missing: true,
        ..table()
    };
    let n = step_note(&rel, "slow", 9 * MB, None, true, Some(&after(true)));
    assert_eq!(n.note, "its files cannot be found: the size to copy is unknown, and ALTER ... SET TABLESPACE would fail (a tmpfs tablespace after a reboot?); the call copies 9.0 MB besides");
    assert_eq!(
        n.missing.as_deref(),
        Some("storlab: the files of public.t cannot be found: bytes to copy unknown (NULL), and the move itself would fail")
    );
}

#[test]
fn a_logged_relation_onto_volatile_storage_is_named_after_the_moves() {
    let n = step_note(&table(), "ram", 9 * MB, Some("tmpfs"), false, None);
    assert_eq!(
        n.note,
        format!("{LOCKED}; ram is volatile storage (tmpfs): a reboot loses this logged relation's files")
    );
    assert!(n.onto_volatile);
}

#[test]
fn a_dry_run_onto_volatile_storage_only_notes_it() {
    let n = step_note(&table(), "ram", 9 * MB, Some("tmpfs"), true, None);
    assert_eq!(
        n.note,
        format!("{LOCKED}; ram is volatile storage (tmpfs): a reboot loses this logged relation's files")
    );
    assert!(!n.onto_volatile);
}

#[test]
fn an_unlogged_relation_or_one_without_storage_is_not_at_risk() {
    let unlogged = Facts {
        logged: false,
        ..table()
    };
    let n = step_note(&unlogged, "ram", 9 * MB, Some("tmpfs"), false, None);
    assert_eq!(n.note, LOCKED);
    assert!(!n.onto_volatile);
    let parent = Facts {
        kind: Kind::PartitionedTable,
        qualified: "public.p",
        bytes: 0,
        ..table()
    };
    let n = step_note(&parent, "ram", 9 * MB, Some("tmpfs"), false, None);
    assert!(!n.note.contains("volatile"));
    assert!(!n.onto_volatile);
}

#[test]
fn a_dry_run_says_what_the_target_has_left() {
    let n = step_note(&table(), "slow", 9 * MB, None, true, Some(&after(true)));
    assert_eq!(
        n.note,
        format!("{LOCKED}; slow has 100.0 MB free now, 91.0 MB after this call")
    );
}

#[test]
fn a_dry_run_says_when_the_call_does_not_fit() {
    let n = step_note(&table(), "slow", 9 * MB, None, true, Some(&after(false)));
    assert_eq!(
        n.note,
        format!("{LOCKED}; slow has 100.0 MB free now, 91.0 MB after this call: does not fit (storlab.min_free_bytes keeps 95.0 MB free)")
    );
}

#[test]
fn a_move_does_not_say_the_space_left() {
    let n = step_note(&table(), "slow", 9 * MB, None, false, Some(&after(false)));
    assert_eq!(n.note, LOCKED);
}

#[test]
fn the_volatile_warning_counts_and_names_the_relations() {
    assert_eq!(
        volatile_warning("ram", "tmpfs", &["public.t".into(), "public.t_pkey".into()]),
        "storlab: durable data moved onto volatile storage: ram is on tmpfs, which a reboot empties; 2 logged relation(s) went there (public.t, public.t_pkey): after a reboot their files are gone and the database with them"
    );
}
