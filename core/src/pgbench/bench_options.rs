//! `BenchOptions`: a benchmark run as pgbench arguments.
//!
//! The result is a vector of separate arguments for `Command::args`, never
//! a shell string, so names and paths with spaces or quotes need no
//! escaping. Long options of the form `--name=value` keep each value glued
//! to its option: a value starting with `-` cannot be mistaken for one.
//!
//! A run owns a fresh folder (`run_dir`): the storlab script file and every
//! log file pgbench writes go there. pgbench names its logs
//! `<prefix>.<pid>` and `<prefix>.<pid>.<thread>`, so two runs sharing a
//! folder could only be told apart by a pid that the OS recycles; a folder
//! per run makes "all files in the folder" exactly "this run's files".

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::connection::{check_range, check_text, invalid, Connection};
use super::error::PgbenchError;
use super::scripts::{self, Script, ScriptSource};
use super::tx_log::TxLogFormat;

/// pgbench formats log file names into a buffer of MAXPGPATH bytes and
/// silently truncates longer ones, which would put the logs where nobody
/// looks. The suffix is `.<pid>.<thread>`: at most 1 + 10 + 1 + 10 bytes.
const MAXPGPATH: usize = 1024;
const LOG_SUFFIX_MAX: usize = 22;
const LOG_PREFIX_MAX: usize = 64;

/// How pgbench sends queries (`--protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Protocol {
    #[default]
    Simple,
    Extended,
    Prepared,
}

impl Protocol {
    pub const ALL: [Protocol; 3] = [Protocol::Simple, Protocol::Extended, Protocol::Prepared];

    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
            Protocol::Prepared => "prepared",
        }
    }

    /// Parses a name in any ASCII case; the error lists the three names.
    pub fn parse(name: &str) -> Result<Protocol, PgbenchError> {
        Protocol::ALL
            .into_iter()
            .find(|p| p.as_str().eq_ignore_ascii_case(name.trim()))
            .ok_or_else(|| {
                invalid(format!(
                    "protocol must be one of simple, extended, prepared, got \"{name}\""
                ))
            })
    }
}

/// One benchmark run. Integers are `i32` because that is both what SQL
/// hands over and what pgbench accepts; the checks report negative values
/// in the same words as out-of-range ones.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchOptions {
    /// A name from the script catalogue (`scripts::find`).
    pub script: String,
    /// The scale the database was initialised with. Required for storlab
    /// scripts, whose `:scale` pgbench would otherwise set to 1 (it only
    /// counts `pgbench_branches` for its builtins); not passed for
    /// builtins, for which pgbench would ignore it with a warning.
    pub scale: Option<i32>,
    pub clients: i32,
    /// pgbench threads; at most `clients`.
    pub jobs: i32,
    pub duration_s: i32,
    pub protocol: Protocol,
    /// Target rate in transactions per second (`--rate`); `None` runs flat out.
    pub rate_tps: Option<f64>,
    /// Seconds between progress lines on stderr (`--progress`).
    pub progress_s: Option<i32>,
    /// Write log files (`--log`) into `run_dir`.
    pub log: bool,
    /// Log only this fraction of transactions, in (0, 1].
    pub sampling_rate: Option<f64>,
    /// File name prefix of the logs: letters, digits, `_` and `-`.
    pub log_prefix: String,
    /// Absolute path of a folder that does not exist yet; see the module
    /// documentation and `prepare_run_dir`.
    pub run_dir: PathBuf,
    /// Skip pgbench's VACUUM of its tables before the run (`--no-vacuum`).
    pub no_vacuum: bool,
    pub connection: Connection,
}

impl BenchOptions {
    /// Options with pgbench's defaults for everything but what must be
    /// chosen: script, database, and the run's folder.
    pub fn new(script: &str, dbname: &str, run_dir: impl Into<PathBuf>) -> BenchOptions {
        BenchOptions {
            script: script.to_string(),
            scale: None,
            clients: 1,
            jobs: 1,
            duration_s: 60,
            protocol: Protocol::Simple,
            rate_tps: None,
            progress_s: None,
            log: false,
            sampling_rate: None,
            log_prefix: "pgbench_log".to_string(),
            run_dir: run_dir.into(),
            no_vacuum: false,
            connection: Connection {
                dbname: dbname.to_string(),
                ..Default::default()
            },
        }
    }

    /// Checks every option and returns the script they name.
    pub fn validate(&self) -> Result<Script, PgbenchError> {
        let script = scripts::find(&self.script).map_err(PgbenchError::UnknownScript)?;
        let max = i32::MAX;
        check_range("clients", self.clients, 1, max)?;
        check_range("jobs", self.jobs, 1, max)?;
        if self.jobs > self.clients {
            // pgbench would quietly lower it; refusing keeps the stored
            // options equal to what actually ran.
            return Err(invalid(format!(
                "jobs ({}) must not exceed clients ({})",
                self.jobs, self.clients
            )));
        }
        check_range("duration", self.duration_s, 1, max)?;
        if let Some(scale) = self.scale {
            check_range("scale", scale, 1, max)?;
        } else if script.uses_scale() {
            return Err(invalid(format!(
                "script \"{}\" needs the scale the database was initialised with",
                script.name
            )));
        }
        if let Some(rate) = self.rate_tps {
            if !(rate > 0.0 && rate.is_finite()) {
                return Err(invalid(format!("rate must be greater than 0, got {rate}")));
            }
        }
        if let Some(p) = self.progress_s {
            check_range("progress interval", p, 1, max)?;
        }
        if let Some(s) = self.sampling_rate {
            if !(s > 0.0 && s <= 1.0) {
                return Err(invalid(format!("sampling rate must be in (0, 1], got {s}")));
            }
            if !self.log {
                return Err(invalid(
                    "sampling rate needs the transaction log (log = true)",
                ));
            }
        }
        check_log_prefix(&self.log_prefix)?;
        check_run_dir(&self.run_dir)?;
        let longest = self.log_prefix_path().as_os_str().len() + LOG_SUFFIX_MAX;
        if longest >= MAXPGPATH {
            return Err(invalid(format!(
                "run folder path is too long for pgbench's log file names ({longest} of at most {} bytes)",
                MAXPGPATH - 1
            )));
        }
        Ok(script)
    }

    /// The path pgbench's `--log-prefix` gets: logs land in `run_dir`
    /// whatever pgbench's working folder is.
    pub fn log_prefix_path(&self) -> PathBuf {
        self.run_dir.join(&self.log_prefix)
    }

    /// Where `prepare_run_dir` writes a storlab script; `None` for builtins.
    pub fn script_path(&self) -> Option<PathBuf> {
        let script = scripts::find(&self.script).ok()?;
        (script.source == ScriptSource::Storlab)
            .then(|| self.run_dir.join(format!("{}.sql", script.name)))
    }

    /// The columns of the per-transaction log these options produce.
    pub fn tx_log_format(&self) -> TxLogFormat {
        TxLogFormat {
            schedule_lag: self.rate_tps.is_some(),
            // storlab never passes --max-tries, so pgbench's default of 1
            // applies and no retries column is written.
            retries: false,
        }
    }

    /// The pgbench command line after the program name.
    pub fn args(&self) -> Result<Vec<OsString>, PgbenchError> {
        let script = self.validate()?;
        let mut args: Vec<OsString> = Vec::new();
        match script.source {
            ScriptSource::Builtin => args.push(format!("--builtin={}", script.name).into()),
            ScriptSource::Storlab => {
                let path = self
                    .script_path()
                    .ok_or_else(|| invalid(format!("script \"{}\" has no file", script.name)))?;
                args.push(concat("--file=", &path));
                if let Some(scale) = self.scale {
                    args.push(format!("--scale={scale}").into());
                }
            }
        }
        args.push(format!("--client={}", self.clients).into());
        args.push(format!("--jobs={}", self.jobs).into());
        args.push(format!("--time={}", self.duration_s).into());
        args.push(format!("--protocol={}", self.protocol.as_str()).into());
        if let Some(rate) = self.rate_tps {
            // Rust prints f64 without exponent, which is what strtod wants.
            args.push(format!("--rate={rate}").into());
        }
        if let Some(p) = self.progress_s {
            args.push(format!("--progress={p}").into());
        }
        if self.log {
            args.push("--log".into());
            args.push(concat("--log-prefix=", &self.log_prefix_path()));
            if let Some(s) = self.sampling_rate {
                args.push(format!("--sampling-rate={s}").into());
            }
        }
        // Without it, pgbench 15 writes only "failed" in the per-transaction
        // log; with it, the log and the summary say which kind.
        args.push("--failures-detailed".into());
        if self.no_vacuum {
            args.push("--no-vacuum".into());
        }
        self.connection.push_args(&mut args)?;
        Ok(args)
    }

    /// Creates `run_dir` and writes the storlab script into it.
    ///
    /// The folder is created with `create_dir`, which fails if it already
    /// exists: that is what guarantees the folder holds this run's files
    /// only. Its parents are created as needed: `base/pgsql_tmp` exists only
    /// once something has written a temp file there (never, on a cluster
    /// fresh from initdb or pg_upgrade). Call once, before spawning pgbench.
    pub fn prepare_run_dir(&self) -> Result<(), PgbenchError> {
        let script = self.validate()?;
        if let Some(parent) = self.run_dir.parent() {
            fs::create_dir_all(parent)
                .map_err(|e| PgbenchError::io(format!("cannot create {}", parent.display()), e))?;
        }
        fs::create_dir(&self.run_dir).map_err(|e| {
            let hint = if e.kind() == std::io::ErrorKind::AlreadyExists {
                " (each run needs a fresh folder, so that its log files cannot mix with another run's)"
            } else {
                ""
            };
            PgbenchError::io(
                format!("cannot create run folder {}{hint}", self.run_dir.display()),
                e,
            )
        })?;
        if let (Some(text), Some(path)) = (script.text, self.script_path()) {
            let write = || -> std::io::Result<()> {
                let mut f = fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)?;
                f.write_all(text.as_bytes())?;
                f.sync_all()
            };
            write().map_err(|e| {
                PgbenchError::io(format!("cannot write script file {}", path.display()), e)
            })?;
        }
        Ok(())
    }
}

fn concat(option: &str, path: &Path) -> OsString {
    let mut s = OsString::from(option);
    s.push(path.as_os_str());
    s
}

fn check_log_prefix(prefix: &str) -> Result<(), PgbenchError> {
    check_text("log prefix", prefix)?;
    // The prefix is a file name inside run_dir; anything that could climb
    // out of it or confuse the `<prefix>.<pid>` pattern is refused.
    if prefix.len() > LOG_PREFIX_MAX
        || !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(invalid(format!(
            "log prefix must be 1 to {LOG_PREFIX_MAX} letters, digits, '_' or '-', got \"{prefix}\""
        )));
    }
    Ok(())
}

fn check_run_dir(dir: &Path) -> Result<(), PgbenchError> {
    // pgbench runs in whatever folder the backend is in; a relative path
    // would land in the data directory.
    if !dir.is_absolute() {
        return Err(invalid(format!(
            "run folder must be an absolute path, got \"{}\"",
            dir.display()
        )));
    }
    if dir.as_os_str().as_bytes().contains(&0) {
        return Err(invalid("run folder must not contain a NUL byte"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pgbench::test_support::TempDir;

    fn opts(script: &str) -> BenchOptions {
        BenchOptions::new(script, "bench", "/tmp/storlab-run-1")
    }

    fn strings(o: &BenchOptions) -> Vec<String> {
        o.args()
            .unwrap()
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect()
    }

    fn err(o: &BenchOptions) -> String {
        o.args().unwrap_err().to_string()
    }

    #[test]
    fn builtin_with_every_option() {
        let mut o = opts("tpcb-like");
        o.clients = 8;
        o.jobs = 4;
        o.duration_s = 120;
        o.protocol = Protocol::Prepared;
        o.rate_tps = Some(1500.5);
        o.progress_s = Some(1);
        o.log = true;
        o.sampling_rate = Some(0.01);
        o.no_vacuum = true;
        o.connection.host = Some("/var/run/postgresql".into());
        o.connection.port = Some(5432);
        o.connection.user = Some("postgres".into());
        assert_eq!(
            strings(&o),
            [
                "--builtin=tpcb-like",
                "--client=8",
                "--jobs=4",
                "--time=120",
                "--protocol=prepared",
                "--rate=1500.5",
                "--progress=1",
                "--log",
                "--log-prefix=/tmp/storlab-run-1/pgbench_log",
                "--sampling-rate=0.01",
                "--failures-detailed",
                "--no-vacuum",
                "--host=/var/run/postgresql",
                "--port=5432",
                "--username=postgres",
                "--",
                "bench",
            ]
        );
        assert_eq!(o.script_path(), None);
        assert_eq!(
            o.tx_log_format(),
            TxLogFormat {
                schedule_lag: true,
                retries: false
            }
        );
    }

    #[test]
    fn storlab_script_runs_from_the_run_folder_with_its_scale() {
        let mut o = opts("Update-HOT");
        o.scale = Some(50);
        o.log = true;
        o.log_prefix = "tx".into();
        let args = strings(&o);
        assert_eq!(args[0], "--file=/tmp/storlab-run-1/update-hot.sql");
        assert_eq!(args[1], "--scale=50");
        assert!(args.contains(&"--log-prefix=/tmp/storlab-run-1/tx".to_string()));
        assert!(!args.iter().any(|a| a.starts_with("--sampling-rate")));
        assert_eq!(
            o.script_path(),
            Some(PathBuf::from("/tmp/storlab-run-1/update-hot.sql"))
        );
        assert_eq!(o.tx_log_format(), TxLogFormat::default());
    }

    #[test]
    fn scale_is_required_for_storlab_scripts_and_not_passed_for_builtins() {
        let o = opts("range-scan");
        assert!(err(&o).contains("needs the scale"), "{}", err(&o));
        let mut b = opts("select-only");
        b.scale = Some(10);
        assert!(!strings(&b).iter().any(|a| a.starts_with("--scale")));
    }

    #[test]
    fn unknown_script_is_its_own_error() {
        let e = opts("nope").args().unwrap_err();
        assert!(matches!(e, PgbenchError::UnknownScript(_)), "{e:?}");
        assert!(e.to_string().contains("known scripts: tpcb-like"), "{e}");
    }

    #[test]
    fn protocol_names() {
        for p in Protocol::ALL {
            assert_eq!(Protocol::parse(p.as_str()).unwrap(), p);
        }
        assert_eq!(Protocol::parse("Prepared").unwrap(), Protocol::Prepared);
        let e = Protocol::parse("binary").unwrap_err().to_string();
        assert!(e.contains("one of simple, extended, prepared"), "{e}");
    }

    #[test]
    fn out_of_range_values_are_refused() {
        type Edit = fn(&mut BenchOptions);
        let cases: [(Edit, &str); 13] = [
            (|o| o.clients = 0, "clients must be in range 1.."),
            (|o| o.clients = -4, "got -4"),
            (|o| o.jobs = 0, "jobs must be in range 1.."),
            (
                |o| {
                    o.clients = 2;
                    o.jobs = 3
                },
                "jobs (3) must not exceed clients (2)",
            ),
            (|o| o.duration_s = 0, "duration must be in range 1.."),
            (|o| o.rate_tps = Some(0.0), "rate must be greater than 0"),
            (
                |o| o.rate_tps = Some(f64::NAN),
                "rate must be greater than 0",
            ),
            (
                |o| o.rate_tps = Some(f64::INFINITY),
                "rate must be greater than 0",
            ),
            (|o| o.progress_s = Some(0), "progress interval"),
            (
                |o| {
                    o.log = true;
                    o.sampling_rate = Some(0.0)
                },
                "sampling rate must be in (0, 1]",
            ),
            (
                |o| {
                    o.log = true;
                    o.sampling_rate = Some(1.5)
                },
                "sampling rate must be in (0, 1]",
            ),
            (
                |o| {
                    o.log = true;
                    o.sampling_rate = Some(f64::NAN)
                },
                "sampling rate must be in (0, 1]",
            ),
            (|o| o.sampling_rate = Some(0.5), "needs the transaction log"),
        ];
        for (edit, want) in cases {
            let mut o = opts("select-only");
            edit(&mut o);
            let e = o.args().unwrap_err();
            assert!(matches!(e, PgbenchError::InvalidOption(_)), "{e:?}");
            assert!(e.to_string().contains(want), "{e} should contain {want}");
        }
        let mut ok = opts("select-only");
        ok.log = true;
        ok.sampling_rate = Some(1.0);
        assert!(ok.args().is_ok(), "sampling rate 1 is allowed");
    }

    #[test]
    fn log_prefix_and_run_folder_are_checked() {
        for bad in ["", "a/b", "..", "x y", "a.b", &"p".repeat(65)] {
            let mut o = opts("select-only");
            o.log_prefix = bad.to_string();
            assert!(err(&o).contains("log prefix"), "{bad:?}: {}", err(&o));
        }
        let mut o = opts("select-only");
        o.run_dir = PathBuf::from("relative/run");
        assert!(err(&o).contains("absolute path"), "{}", err(&o));
        o.run_dir = PathBuf::from(format!("/{}", "d".repeat(1000)));
        assert!(err(&o).contains("too long"), "{}", err(&o));
    }

    #[test]
    fn prepare_run_dir_writes_the_script_once() {
        let parent = TempDir::new("prepare");
        let mut o = BenchOptions::new("index-lookup", "db", parent.path().join("run"));
        o.scale = Some(1);
        o.prepare_run_dir().unwrap();
        let written = fs::read_to_string(o.script_path().unwrap()).unwrap();
        assert_eq!(
            written,
            scripts::find("index-lookup").unwrap().text.unwrap()
        );
        // A second run with the same folder is refused, not mixed in.
        let e = o.prepare_run_dir().unwrap_err().to_string();
        assert!(e.contains("fresh folder"), "{e}");
        // Builtins need no file.
        let b = BenchOptions::new("select-only", "db", parent.path().join("run2"));
        b.prepare_run_dir().unwrap();
        assert_eq!(fs::read_dir(parent.path().join("run2")).unwrap().count(), 0);
        // Missing parents are made (base/pgsql_tmp of a fresh cluster);
        // one that cannot be is an I/O error, not a panic.
        let deep = BenchOptions::new("select-only", "db", parent.path().join("pgsql_tmp/job/run"));
        deep.prepare_run_dir().unwrap();
        assert!(parent.path().join("pgsql_tmp/job/run").is_dir());
        fs::write(parent.path().join("file"), b"x").unwrap();
        let blocked = BenchOptions::new("select-only", "db", parent.path().join("file/run"));
        assert!(matches!(
            blocked.prepare_run_dir(),
            Err(PgbenchError::Io { .. })
        ));
        // Invalid options create nothing.
        let mut bad = BenchOptions::new("select-only", "db", parent.path().join("run3"));
        bad.clients = 0;
        assert!(bad.prepare_run_dir().is_err());
        assert!(!parent.path().join("run3").exists());
    }
}
