//! A child program (pgbench) run by a job: in a process group of its own,
//! so that stopping it stops every process it started, and killed by the
//! kernel if the worker itself dies (PR_SET_PDEATHSIG), so that no pgbench
//! ever outlives its job. Pure Rust: the caller decides when to stop.

use std::ffi::OsString;
use std::fs::File;
use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

#[derive(Debug)]
pub enum Outcome {
    Exited(ExitStatus),
    /// Stopped by us, for the reason the caller gave (or "deadline").
    Stopped(String),
}

/// Runs `program` with `args`, its output in `dir/stdout` and `dir/stderr`.
/// `stop` is called in a loop (it paces itself, e.g. by waiting on a latch)
/// and returns a reason to stop the child; after `deadline` the child is stopped anyway.
pub fn run(
    program: &Path,
    args: &[OsString],
    dir: &Path,
    deadline: Duration,
    stop: &mut dyn FnMut() -> Option<String>,
) -> io::Result<Outcome> {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(File::create(dir.join("stdout"))?)
        .stderr(File::create(dir.join("stderr"))?);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            // own process group: kill(-pgid) reaches every thread and child
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // dies with the worker, whatever kills the worker
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            // a backend blocks signals at times; the child must not inherit that
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Outcome::Exited(status));
        }
        let reason = match stop() {
            Some(reason) => Some(reason),
            None if start.elapsed() > deadline => Some("deadline".to_string()),
            None => None,
        };
        if let Some(reason) = reason {
            stop_group(&mut child);
            return Ok(Outcome::Stopped(reason));
        }
    }
}

/// SIGTERM to the whole group, SIGKILL after a second, then reap.
fn stop_group(child: &mut std::process::Child) {
    let pgid = child.id() as libc::pid_t;
    // SAFETY: signals a process group we created.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("storlab_proc_{tag}_{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn output_lands_in_files_and_the_status_is_kept() {
        let d = dir("out");
        let args: Vec<OsString> = vec!["-c".into(), "echo hello; echo oops >&2; exit 3".into()];
        let out = run(
            Path::new("/bin/sh"),
            &args,
            &d,
            Duration::from_secs(10),
            &mut || None,
        )
        .unwrap();
        match out {
            Outcome::Exited(s) => assert_eq!(s.code(), Some(3)),
            o => panic!("{o:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(d.join("stdout")).unwrap(),
            "hello\n"
        );
        assert_eq!(std::fs::read_to_string(d.join("stderr")).unwrap(), "oops\n");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn stopping_kills_the_whole_group_promptly() {
        let d = dir("stop");
        // the shell starts a grandchild that would outlive a plain kill of the shell
        let args: Vec<OsString> = vec!["-c".into(), "sleep 30 & echo $! > grandchild; wait".into()];
        let t0 = Instant::now();
        let mut polls = 0;
        let out = run(
            Path::new("/bin/sh"),
            &args,
            &d,
            Duration::from_secs(30),
            &mut || {
                polls += 1;
                std::thread::sleep(Duration::from_millis(20));
                (polls > 10).then(|| "cancelled".to_string())
            },
        )
        .unwrap();
        assert!(
            matches!(out, Outcome::Stopped(ref r) if r == "cancelled"),
            "{out:?}"
        );
        assert!(t0.elapsed() < Duration::from_secs(3));
        let grandchild: i32 = std::fs::read_to_string(d.join("grandchild"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // dead, or a zombie waiting for whoever inherited it to reap it
        let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
        let running = state
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.is_empty() && !rest.trim_start().starts_with('Z'));
        assert!(!running, "the grandchild died with its group: {state}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn the_deadline_stops_a_child_that_runs_too_long() {
        let d = dir("deadline");
        let args: Vec<OsString> = vec!["30".into()];
        let out = run(
            Path::new("/bin/sleep"),
            &args,
            &d,
            Duration::from_millis(200),
            &mut || {
                std::thread::sleep(Duration::from_millis(20));
                None
            },
        )
        .unwrap();
        assert!(matches!(out, Outcome::Stopped(ref r) if r == "deadline"));
        std::fs::remove_dir_all(&d).unwrap();
    }
}
