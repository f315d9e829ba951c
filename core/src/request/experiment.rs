//! An experiment: a layout x fillfactor x clients matrix of pgbench runs,
//! repeated, visited in an order that alternates between repetitions. The
//! request is checked here once (22023 before anything runs or moves); the
//! worker reads back the same struct and walks [`Experiment::steps`].
//! Catalog checks (tablespaces exist, settings a session may change) are
//! the operations' (`ops::experiment`).

use serde::{Deserialize, Serialize};

use super::bench::{BenchRun, RunOptions, OPTION_KEYS as RUN_OPTION_KEYS};
use crate::error::{invalid, Result};
use crate::sequential::{
    Design, DEFAULT_EQUIVALENCE_PCT, DEFAULT_MAX_REPETITIONS, DEFAULT_MIN_REPETITIONS,
};

/// Where one layout puts pgbench's relations, and the session its runs get.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// Tablespace of pgbench's tables (None: they stay where they are).
    pub tables: Option<String>,
    /// Tablespace of their indexes.
    pub indexes: Option<String>,
    /// temp_tablespaces of the runs' sessions.
    pub temp: Option<String>,
    /// Session settings of pgbench's connections, as given (name, value).
    pub settings: Vec<(String, String)>,
    /// A tablespace whose filesystem pg_wal must be on for the layout's
    /// runs (pg_default, pg_global: the data folder's). The server must be
    /// stopped to move pg_wal: the experiment stops where the next run
    /// needs it elsewhere, and is resumed once it was moved. None: WAL
    /// anywhere (still recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub name: String,
    pub placement: Placement,
}

/// Where an omitted part of a layout goes, decided once when the
/// experiment is started.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolved {
    pub layout: String,
    /// "tables", "indexes" or "wal"
    pub part: &'static str,
    pub tablespace: String,
    /// "the baseline's", "the database's default tablespace" or (wal) "the
    /// data directory's (pg_default)"
    pub from: &'static str,
}

/// In which order each repetition visits its cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// A B C, then C B A, then A B C...: a slow drift (a filling disk, a
    /// warming cache, bloat) adds about as much to each cell, so it cancels
    /// out of the differences between them.
    Alternating,
    /// A B C every time: what hand-run studies do; kept to measure what
    /// alternating buys.
    Fixed,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    pub name: String,
    /// The baseline first, then the others in the order jsonb keeps them.
    pub layouts: Vec<Layout>,
    pub script: String,
    pub clients: Vec<i32>,
    pub jobs: i32,
    pub duration_s: u32,
    pub repetitions: i32,
    /// 0: no warm-up run.
    pub warmup_s: u32,
    pub scale: i32,
    pub fillfactors: Vec<i32>,
    pub order: Order,
    /// How long each move waits for its lock.
    pub lock_timeout_ms: u64,
    /// Keep pgbench's tables when the database already holds them whole at
    /// this scale and fillfactor, instead of a fresh `pgbench -i`: on slow
    /// storage an initialisation takes minutes (its ANALYZE alone reads
    /// 30,000 random pages). Absent from experiments stored before it.
    #[serde(default)]
    pub reuse_tables: bool,
    /// pgbench options of every run (protocol, rate...), as for bench_start.
    pub run: RunOptions,
    /// How it stops: None, after `repetitions` (fixed, the default); a
    /// design, when every comparison with the baseline is decided or after
    /// its max_repetitions (`repetitions` is then that maximum). Absent
    /// from experiments stored before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Design>,
}

/// One step of the job, in the order it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// pgbench -i at this fillfactor.
    Init { fillfactor: i32 },
    /// Apply a layout and record the size of every relation under it.
    Sizes { fillfactor: i32, layout: usize },
    /// Apply a layout, VACUUM, CHECKPOINT, warm up, measure.
    Run {
        fillfactor: i32,
        repetition: i32,
        layout: usize,
        clients: i32,
    },
}

/// The keys of `options` that belong to the experiment; the others are
/// pgbench run options (RunOptions).
const EXPERIMENT_OPTIONS: [&str; 8] = [
    "baseline",
    "order",
    "lock_timeout_ms",
    "reuse_tables",
    "stop",
    "min_repetitions",
    "max_repetitions",
    "equivalence_pct",
];
/// The options of a sequential stop, refused with the fixed one.
const SEQUENTIAL_OPTIONS: [&str; 3] = ["min_repetitions", "max_repetitions", "equivalence_pct"];
const PLACEMENT_KEYS: [&str; 5] = ["tables", "indexes", "temp", "settings", "wal"];

/// The arguments of experiment_start, as the SQL function received them.
pub struct Args<'a> {
    pub name: String,
    pub layouts: &'a serde_json::Value,
    pub script: String,
    pub clients: Vec<i32>,
    pub jobs: i32,
    pub duration_us: i64,
    pub repetitions: i32,
    pub warmup_us: i64,
    pub scale: i32,
    pub fillfactors: Vec<i32>,
    pub options: &'a serde_json::Value,
    /// storlab.max_bench_duration
    pub max_duration_s: i64,
}

impl Experiment {
    pub fn new(a: Args) -> Result<Self> {
        if a.name.trim().is_empty() {
            return Err(invalid(
                "name must not be empty: it labels the experiment's runs",
            ));
        }
        let options = a.options.as_object().ok_or_else(|| {
            invalid("options must be a JSON object, e.g. '{\"baseline\": \"all-disk\"}'")
        })?;
        let mut run_options = serde_json::Map::new();
        for (k, v) in options {
            if EXPERIMENT_OPTIONS.contains(&k.as_str()) {
                continue;
            }
            if !RUN_OPTION_KEYS.contains(&k.as_str()) {
                return Err(invalid(format!(
                    "unknown option \"{k}\"; allowed: {}, and the run options {}",
                    EXPERIMENT_OPTIONS.join(", "),
                    RUN_OPTION_KEYS.join(", ")
                )));
            }
            run_options.insert(k.clone(), v.clone());
        }
        let run = RunOptions::from_json(&serde_json::Value::Object(run_options))?;
        let order = match options.get("order") {
            None => Order::Alternating,
            Some(v) => match v.as_str() {
                Some("alternating") => Order::Alternating,
                Some("fixed") => Order::Fixed,
                _ => {
                    return Err(invalid(format!(
                        "option order = {v}: use \"alternating\" (the default) or \"fixed\""
                    )))
                }
            },
        };
        let lock_timeout_ms = match options.get("lock_timeout_ms") {
            None => 5000,
            Some(v) => v
                .as_u64()
                .filter(|ms| (1..=3_600_000).contains(ms))
                .ok_or_else(|| {
                    invalid(format!(
                        "option lock_timeout_ms = {v}: between 1 and 3600000 (one hour)"
                    ))
                })?,
        };
        let reuse_tables = match options.get("reuse_tables") {
            None => false,
            Some(v) => v
                .as_bool()
                .ok_or_else(|| invalid(format!("option reuse_tables = {v}: true or false")))?,
        };
        let stop = stop_rule(options)?;
        let mut layouts = parse_layouts(a.layouts)?;
        if stop.is_some() && layouts.len() < 2 {
            return Err(invalid(
                "stop \"sequential\" needs at least two layouts: it stops when each layout's comparison with the baseline is decided",
            ));
        }
        if let Some(b) = options.get("baseline") {
            let b = b
                .as_str()
                .ok_or_else(|| invalid(format!("option baseline = {b}: the name of a layout")))?;
            let i = layouts.iter().position(|l| l.name == b).ok_or_else(|| {
                invalid(format!(
                    "option baseline = \"{b}\" names no layout; the layouts are {}",
                    names(&layouts)
                ))
            })?;
            let baseline = layouts.remove(i);
            layouts.insert(0, baseline);
        }
        if a.clients.is_empty() {
            return Err(invalid("clients must list at least one number of clients"));
        }
        if a.fillfactors.is_empty() {
            return Err(invalid("fillfactors must list at least one fillfactor"));
        }
        distinct("clients", &a.clients)?;
        distinct("fillfactors", &a.fillfactors)?;
        if let Some(ff) = a.fillfactors.iter().find(|f| !(10..=100).contains(*f)) {
            return Err(invalid(format!(
                "fillfactor must be between 10 and 100, not {ff}"
            )));
        }
        // checked also where a sequential design's maximum replaces it (a
        // 0 there is a mistake either way); that maximum is within 1..=100
        // already (Design::new)
        if a.repetitions < 1 || a.repetitions > 100 {
            return Err(invalid(format!(
                "repetitions must be between 1 and 100, not {}",
                a.repetitions
            )));
        }
        let repetitions = stop.map_or(a.repetitions, |d| d.max_repetitions as i32);
        if a.scale < 1 {
            return Err(invalid(format!(
                "scale must be at least 1, not {}",
                a.scale
            )));
        }
        if a.jobs < 1 {
            return Err(invalid(format!("jobs must be at least 1, not {}", a.jobs)));
        }
        // every cell's run, checked as bench_start checks one (script,
        // clients, whole seconds within storlab.max_bench_duration); a cell
        // with fewer clients than jobs runs one thread per client
        let mut duration_s = 0;
        for &c in &a.clients {
            duration_s = BenchRun::new(
                a.script.clone(),
                c,
                a.jobs.min(c.max(1)),
                a.duration_us,
                a.max_duration_s,
                &run.to_json(),
            )?
            .duration_s;
        }
        let warmup_s = match a.warmup_us {
            0 => 0,
            us if us < 0 || us % 1_000_000 != 0 || us > a.max_duration_s * 1_000_000 => {
                return Err(invalid(format!(
                    "warmup must be 0 (none) or whole seconds up to storlab.max_bench_duration ({} s), not {} s",
                    a.max_duration_s,
                    us as f64 / 1e6
                )))
            }
            us => (us / 1_000_000) as u32,
        };
        Ok(Experiment {
            name: a.name,
            layouts,
            script: a.script,
            clients: a.clients,
            jobs: a.jobs,
            duration_s,
            repetitions,
            warmup_s,
            scale: a.scale,
            fillfactors: a.fillfactors,
            order,
            lock_timeout_ms,
            reuse_tables,
            run,
            stop,
        })
    }

    /// How many comparisons a sequential design shares its error among:
    /// each layout but the baseline, at each clients and fillfactor.
    pub fn comparisons(&self) -> usize {
        (self.layouts.len() - 1) * self.clients.len() * self.fillfactors.len()
    }

    /// Gives every layout a tablespace for its tables and for its indexes:
    /// a part a layout omits is where the baseline (the first layout) puts
    /// it, or, when the baseline omits it too, `default_tablespace` (the
    /// database's). Every run of a layout then starts from the same stated
    /// placement, whichever layout ran before it; the layouts are stored so
    /// resolved, and applied before every cell. Returns what was filled in.
    pub fn resolve_omitted_parts(&mut self, default_tablespace: &str) -> Vec<Resolved> {
        let mut filled = Vec::new();
        let (base_tables, base_indexes) = {
            let b = &self.layouts[0].placement;
            (b.tables.clone(), b.indexes.clone())
        };
        for (i, layout) in self.layouts.iter_mut().enumerate() {
            for (part, slot, base) in [
                ("tables", &mut layout.placement.tables, &base_tables),
                ("indexes", &mut layout.placement.indexes, &base_indexes),
            ] {
                if slot.is_some() {
                    continue;
                }
                let (tablespace, from) = match base {
                    Some(b) if i > 0 => (b.clone(), "the baseline's"),
                    _ => (
                        default_tablespace.to_string(),
                        "the database's default tablespace",
                    ),
                };
                *slot = Some(tablespace.clone());
                filled.push(Resolved {
                    layout: layout.name.clone(),
                    part,
                    tablespace,
                    from,
                });
            }
        }
        // pg_wal is placed only when some layout names it; then a layout
        // that omits it wants it where the baseline does, or where
        // PostgreSQL keeps it (the data directory: pg_default), so that no
        // run measures WAL wherever the last move happened to leave it
        if self.layouts.iter().any(|l| l.placement.wal.is_some()) {
            let base_wal = self.layouts[0].placement.wal.clone();
            for (i, layout) in self.layouts.iter_mut().enumerate() {
                if layout.placement.wal.is_some() {
                    continue;
                }
                let (tablespace, from) = match &base_wal {
                    Some(b) if i > 0 => (b.clone(), "the baseline's"),
                    _ => (
                        "pg_default".to_string(),
                        "the data directory's (pg_default)",
                    ),
                };
                layout.placement.wal = Some(tablespace.clone());
                filled.push(Resolved {
                    layout: layout.name.clone(),
                    part: "wal",
                    tablespace,
                    from,
                });
            }
        }
        filled
    }

    /// The run of one cell, as bench_start would make it.
    pub fn run(&self, clients: i32, duration_s: u32) -> BenchRun {
        BenchRun {
            script: self.script.clone(),
            clients,
            jobs: self.jobs.min(clients),
            duration_s,
            options: self.run.clone(),
        }
    }

    /// The cells of one repetition (1-based) in the order it visits them.
    pub fn cells(&self, repetition: i32) -> Vec<(usize, i32)> {
        let mut cells: Vec<(usize, i32)> = (0..self.layouts.len())
            .flat_map(|l| self.clients.iter().map(move |&c| (l, c)))
            .collect();
        if self.order == Order::Alternating && repetition % 2 == 0 {
            cells.reverse();
        }
        cells
    }

    /// Every step of the job. Per fillfactor: pgbench -i; the sizes under
    /// each layout (in reverse, so that the last one applied is the first
    /// the runs need: one move saved); then each repetition's cells.
    pub fn steps(&self) -> Vec<Step> {
        let mut steps = Vec::new();
        for &fillfactor in &self.fillfactors {
            steps.push(Step::Init { fillfactor });
            for layout in (0..self.layouts.len()).rev() {
                steps.push(Step::Sizes { fillfactor, layout });
            }
            for repetition in 1..=self.repetitions {
                for (layout, clients) in self.cells(repetition) {
                    steps.push(Step::Run {
                        fillfactor,
                        repetition,
                        layout,
                        clients,
                    });
                }
            }
        }
        steps
    }

    /// The tablespace whose filesystem pg_wal must be on for this step
    /// (a run of a layout with `wal`), if any.
    pub fn wal_needed(&self, step: Step) -> Option<&str> {
        match step {
            Step::Run { layout, .. } => self.layouts[layout].placement.wal.as_deref(),
            _ => None,
        }
    }

    /// Why the experiment stops before `step`, whose layout needs pg_wal on
    /// `needed`'s filesystem while it is on `here` (a tablespace sharing its
    /// filesystem, else None) mounted at `mount_point`: what to do, for a
    /// person or a script to read.
    pub fn wal_stop_reason(
        &self,
        id: i64,
        step: Step,
        needed: &str,
        here: Option<&str>,
        mount_point: &str,
    ) -> String {
        let Step::Run {
            fillfactor,
            repetition,
            layout,
            clients,
        } = step
        else {
            return String::new();
        };
        let here = match here {
            Some(t) => format!("{t}'s filesystem"),
            None => format!("the filesystem mounted at {mount_point}, where no tablespace is"),
        };
        let mut run = format!(
            "layout \"{}\", repetition {repetition}",
            self.layouts[layout].name
        );
        if self.fillfactors.len() > 1 {
            run.push_str(&format!(", fillfactor {fillfactor}"));
        }
        if self.clients.len() > 1 {
            run.push_str(&format!(", clients {clients}"));
        }
        format!(
            "pg_wal is on {here}; the next run ({run}) needs it on {needed}'s: \
             move pg_wal while the server is stopped, then storlab.experiment_resume({id})"
        )
    }

    /// What a person reads in `current_action` while a step runs.
    pub fn describe(&self, step: Step, phase: &str) -> String {
        let ff = |f: i32| {
            if self.fillfactors.len() > 1 {
                format!("fillfactor {f}, ")
            } else {
                String::new()
            }
        };
        let what = match step {
            Step::Init { fillfactor } => {
                format!(
                    "pgbench -i at scale {} and fillfactor {fillfactor}",
                    self.scale
                )
            }
            Step::Sizes { fillfactor, layout } => {
                format!("{}layout {}", ff(fillfactor), self.layouts[layout].name)
            }
            Step::Run {
                fillfactor,
                repetition,
                layout,
                clients,
            } => format!(
                "{}repetition {repetition}{}{}, layout {}, clients {clients}",
                ff(fillfactor),
                if self.stop.is_some() {
                    " of at most "
                } else {
                    "/"
                },
                self.repetitions,
                self.layouts[layout].name
            ),
        };
        match phase {
            "" => what,
            _ => format!("{what}: {phase}"),
        }
    }
}

/// The options' stop rule: None for "fixed" (the default), a checked
/// design for "sequential".
fn stop_rule(options: &serde_json::Map<String, serde_json::Value>) -> Result<Option<Design>> {
    let sequential = match options.get("stop") {
        None => false,
        Some(v) => match v.as_str() {
            Some("fixed") => false,
            Some("sequential") => true,
            _ => {
                return Err(invalid(format!(
                    "option stop = {v}: use \"fixed\" (the default: every repetition runs) or \"sequential\" (stop when every comparison is decided)"
                )))
            }
        },
    };
    if !sequential {
        if let Some(k) = SEQUENTIAL_OPTIONS
            .iter()
            .find(|k| options.contains_key(**k))
        {
            return Err(invalid(format!(
                "option {k} belongs to stop \"sequential\": add \"stop\": \"sequential\", or leave it out"
            )));
        }
        return Ok(None);
    }
    let int = |k: &str, default: u32| -> Result<i64> {
        match options.get(k) {
            None => Ok(default as i64),
            Some(v) => v
                .as_i64()
                .ok_or_else(|| invalid(format!("option {k} = {v}: a whole number of repetitions"))),
        }
    };
    let equivalence_pct = match options.get("equivalence_pct") {
        None => DEFAULT_EQUIVALENCE_PCT,
        Some(v) => v
            .as_f64()
            .ok_or_else(|| invalid(format!("option equivalence_pct = {v}: a number of percent")))?,
    };
    Design::new(
        int("min_repetitions", DEFAULT_MIN_REPETITIONS)?,
        int("max_repetitions", DEFAULT_MAX_REPETITIONS)?,
        equivalence_pct,
    )
    .map(Some)
}

fn names(layouts: &[Layout]) -> String {
    layouts
        .iter()
        .map(|l| format!("\"{}\"", l.name))
        .collect::<Vec<_>>()
        .join(", ")
}

fn distinct(what: &str, xs: &[i32]) -> Result<()> {
    for (i, x) in xs.iter().enumerate() {
        if xs[..i].contains(x) {
            return Err(invalid(format!("{what} lists {x} twice")));
        }
        if what == "clients" && *x < 1 {
            return Err(invalid(format!("clients must be at least 1, not {x}")));
        }
    }
    Ok(())
}

/// `layouts`: a JSON object from a layout's name to its placement, e.g.
/// `{"all-disk": {"tables": "lab_disk", "indexes": "lab_disk"}}`. jsonb
/// keeps an object's keys in an order of its own (shorter keys first), not
/// as typed: the first key in that order is the baseline unless
/// options.baseline names another. An array of placements, each with its
/// "name", keeps the order as typed: `[{"name": "all-disk", ...}, ...]`.
pub fn parse_layouts(v: &serde_json::Value) -> Result<Vec<Layout>> {
    let shape = || {
        invalid(
            "layouts must be a JSON object from a layout's name to its placement, e.g. \
             '{\"all-disk\": {\"tables\": \"lab_disk\", \"indexes\": \"lab_disk\"}}', \
             or an array of placements with a name each, e.g. '[{\"name\": \"all-disk\", \"tables\": \"lab_disk\"}]'",
        )
    };
    let named: Vec<(String, &serde_json::Value)> = match v {
        serde_json::Value::Object(obj) => obj.iter().map(|(k, p)| (k.clone(), p)).collect(),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|item| {
                let name = item.get("name").and_then(|n| n.as_str()).ok_or_else(|| {
                    invalid(format!(
                        "each layout of an array must be an object with a \"name\", not {item}"
                    ))
                })?;
                Ok((name.to_string(), item))
            })
            .collect::<Result<_>>()?,
        _ => return Err(shape()),
    };
    if named.is_empty() {
        return Err(invalid("layouts must name at least one layout"));
    }
    let mut out: Vec<Layout> = Vec::new();
    for (name, p) in named {
        if name.trim().is_empty() {
            return Err(invalid("a layout's name must not be empty"));
        }
        if out.iter().any(|l| l.name == name) {
            return Err(invalid(format!("layouts names \"{name}\" twice")));
        }
        let p = p.as_object().ok_or_else(|| {
            invalid(format!(
                "layout \"{name}\" must be an object with keys {}",
                PLACEMENT_KEYS.join(", ")
            ))
        })?;
        let mut placement = Placement::default();
        for (key, value) in p {
            let tablespace = || {
                value
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .ok_or_else(|| {
                        invalid(format!(
                            "layout \"{name}\": {key} must be a tablespace's name, not {value}"
                        ))
                    })
            };
            match key.as_str() {
                "tables" => placement.tables = Some(tablespace()?),
                "indexes" => placement.indexes = Some(tablespace()?),
                "temp" => placement.temp = Some(tablespace()?),
                "wal" => placement.wal = Some(tablespace()?),
                "settings" => placement.settings = parse_settings(&name, value)?,
                // the array form's own key
                "name" if v.is_array() => {}
                _ => {
                    return Err(invalid(format!(
                        "layout \"{name}\" has an unknown key \"{key}\"; allowed: {}",
                        PLACEMENT_KEYS.join(", ")
                    )))
                }
            }
        }
        out.push(Layout { name, placement });
    }
    Ok(out)
}

fn parse_settings(layout: &str, v: &serde_json::Value) -> Result<Vec<(String, String)>> {
    let obj = v.as_object().ok_or_else(|| {
        invalid(format!(
            "layout \"{layout}\": settings must be an object, e.g. {{\"synchronous_commit\": \"off\"}}"
        ))
    })?;
    obj.iter()
        .map(|(k, v)| {
            let value = match v {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Number(n) => n.to_string(),
                serde_json::Value::Bool(b) => (if *b { "on" } else { "off" }).to_string(),
                _ => {
                    return Err(invalid(format!(
                    "layout \"{layout}\": setting {k} must be a string, number or boolean, not {v}"
                )))
                }
            };
            // pgbench's sessions get their settings through PGOPTIONS, whose
            // words libpq splits at white space: a tab or a newline in a
            // value would smuggle in options no layout declares
            if let Some(c) = value.chars().find(|c| c.is_control()) {
                return Err(invalid(format!(
                    "layout \"{layout}\": the value of setting {k} contains a control character (U+{:04X}); \
                     setting values are given to pgbench's sessions and may not contain any",
                    c as u32
                )));
            }
            Ok((k.clone(), value))
        })
        .collect()
}

/// The settings a layout gives pgbench's sessions: its own, and
/// temp_tablespaces for its `temp`.
pub fn session_settings(placement: &Placement) -> Vec<(String, String)> {
    let mut settings: Vec<(String, String)> = placement.settings.clone();
    if let Some(t) = &placement.temp {
        // temp_tablespaces is a list of identifiers: quoted, so that any name works
        settings.push((
            "temp_tablespaces".into(),
            format!("\"{}\"", t.replace('"', "\"\"")),
        ));
    }
    settings
}

/// PGOPTIONS for pgbench's connections: `-c name=value` per setting, with
/// spaces and backslashes escaped as libpq's options parser wants them.
pub fn pgoptions(placement: &Placement) -> Option<String> {
    let settings = session_settings(placement);
    if settings.is_empty() {
        return None;
    }
    // libpq splits PGOPTIONS at what C's isspace() calls white space, and
    // takes the character after a backslash as it is
    let escape = |s: &str| {
        let mut out = String::with_capacity(s.len());
        for c in s.chars() {
            if matches!(c, '\\' | ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c') {
                out.push('\\');
            }
            out.push(c);
        }
        out
    };
    Some(
        settings
            .iter()
            .map(|(k, v)| format!("-c {}={}", escape(k), escape(v)))
            .collect::<Vec<_>>()
            .join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args<'a>(layouts: &'a serde_json::Value, options: &'a serde_json::Value) -> Args<'a> {
        Args {
            name: "t".into(),
            layouts,
            script: "tpcb-like".into(),
            clients: vec![8],
            jobs: 2,
            duration_us: 60_000_000,
            repetitions: 3,
            warmup_us: 10_000_000,
            scale: 10,
            fillfactors: vec![100],
            options,
            max_duration_s: 3600,
        }
    }

    fn two() -> serde_json::Value {
        json!({"a": {"tables": "disk", "indexes": "disk"},
               "bb": {"tables": "disk", "indexes": "ram", "temp": "ram",
                      "settings": {"synchronous_commit": "off", "work_mem": 8192}}})
    }

    #[test]
    fn a_sequential_stop_is_checked_before_anything_runs() {
        let l = two();
        let ok = json!({"stop": "sequential", "max_repetitions": 6, "equivalence_pct": 3});
        let e = Experiment::new(args(&l, &ok)).unwrap();
        let d = e.stop.unwrap();
        assert_eq!(
            (d.min_repetitions, d.max_repetitions, d.equivalence_pct),
            (2, 6, 3.0)
        );
        assert_eq!(e.repetitions, 6, "the maximum replaces repetitions");
        assert!(
            e.run.to_json().get("stop").is_none(),
            "not a pgbench option"
        );
        // defaults, and a stored experiment without the field reads back fixed
        let e = Experiment::new(args(&l, &json!({"stop": "sequential"}))).unwrap();
        assert_eq!(
            e.stop.map(|d| (d.min_repetitions, d.max_repetitions)),
            Some((2, 10))
        );
        let fixed = Experiment::new(args(&l, &json!({"stop": "fixed"}))).unwrap();
        assert_eq!((fixed.stop, fixed.repetitions), (None, 3));
        let mut stored = serde_json::to_value(&fixed).unwrap();
        assert!(stored.get("stop").is_none());
        stored.as_object_mut().unwrap().remove("stop");
        assert_eq!(
            serde_json::from_value::<Experiment>(stored).unwrap().stop,
            None
        );
        let refused = |o: serde_json::Value, l: &serde_json::Value| {
            let e = Experiment::new(args(l, &o)).unwrap_err();
            assert_eq!(
                e.state,
                crate::error::SqlState::InvalidParameterValue,
                "{o}"
            );
            e.message
        };
        assert!(refused(json!({"stop": "bayes"}), &l).contains("option stop = \"bayes\""));
        assert!(refused(
            json!({"stop": "sequential", "min_repetitions": 5, "max_repetitions": 4}),
            &l
        )
        .contains("max_repetitions must be between min_repetitions (5)"));
        assert!(
            refused(json!({"stop": "sequential", "equivalence_pct": 0}), &l)
                .contains("equivalence_pct")
        );
        assert!(
            refused(json!({"stop": "sequential", "equivalence_pct": 100}), &l)
                .contains("equivalence_pct")
        );
        assert!(
            refused(json!({"stop": "sequential", "min_repetitions": 1}), &l)
                .contains("min_repetitions")
        );
        assert!(
            refused(json!({"stop": "sequential", "max_repetitions": "ten"}), &l)
                .contains("whole number")
        );
        assert!(
            refused(json!({"max_repetitions": 5}), &l).contains("belongs to stop \"sequential\"")
        );
        let one = json!({"a": {}});
        assert!(refused(json!({"stop": "sequential"}), &one).contains("at least two layouts"));
        // a misspelt option names every option there is
        let m = refused(json!({"stop": "sequential", "equivalence": 5}), &l);
        assert!(
            m.contains("unknown option \"equivalence\"")
                && m.contains("equivalence_pct")
                && m.contains("protocol"),
            "{m}"
        );
        // the repetitions argument is checked even where max_repetitions replaces it
        let seq = json!({"stop": "sequential"});
        let mut a = args(&l, &seq);
        a.repetitions = 0;
        assert!(Experiment::new(a)
            .unwrap_err()
            .message
            .contains("repetitions must be between 1 and 100, not 0"));
        // a fixed experiment of one layout is still fine
        assert!(Experiment::new(args(&one, &json!({}))).is_ok());
    }

    #[test]
    fn a_request_keeps_its_layouts_and_settings() {
        let l = two();
        let o = json!({"protocol": "prepared"});
        let e = Experiment::new(args(&l, &o)).unwrap();
        assert_eq!(e.layouts[0].name, "a");
        assert_eq!(e.layouts[1].placement.indexes.as_deref(), Some("ram"));
        assert_eq!(
            e.layouts[1].placement.settings,
            vec![
                ("synchronous_commit".into(), "off".into()),
                ("work_mem".into(), "8192".into())
            ]
        );
        assert_eq!(e.duration_s, 60);
        assert_eq!(e.warmup_s, 10);
        assert_eq!(e.order, Order::Alternating);
        assert_eq!(e.run.protocol.as_deref(), Some("prepared"));
    }

    #[test]
    fn an_array_of_layouts_keeps_its_order() {
        let layouts = json!([
            {"name": "raid6-everything", "tables": "r6", "indexes": "r6"},
            {"name": "idx", "tables": "r6", "indexes": "r1"}
        ]);
        let e = Experiment::new(args(&layouts, &json!({}))).unwrap();
        assert_eq!(e.layouts[0].name, "raid6-everything");
        assert_eq!(e.layouts[1].placement.indexes.as_deref(), Some("r1"));
        for bad in [
            json!([{"tables": "x"}]),
            json!([{"name": "a"}, {"name": "a"}]),
            json!([]),
        ] {
            let err = parse_layouts(&bad).unwrap_err();
            assert_eq!(
                err.state,
                crate::error::SqlState::InvalidParameterValue,
                "{bad}"
            );
        }
    }

    #[test]
    fn the_baseline_option_moves_a_layout_first() {
        let l = two();
        let o = json!({"baseline": "bb"});
        let e = Experiment::new(args(&l, &o)).unwrap();
        assert_eq!(e.layouts[0].name, "bb");
        let o = json!({"baseline": "zz"});
        let err = Experiment::new(args(&l, &o)).unwrap_err();
        assert!(err.message.contains("names no layout"), "{}", err.message);
    }

    #[test]
    fn bad_layouts_are_22023() {
        let o = json!({});
        for (l, says) in [
            (json!("x"), "JSON object"),
            (json!([]), "at least one layout"),
            (json!({}), "at least one layout"),
            (json!({"a": 1}), "must be an object"),
            (json!({"a": {"table": "x"}}), "unknown key \"table\""),
            (json!({"a": {"tables": 3}}), "tablespace's name"),
            (
                json!({"a": {"settings": {"x": [1]}}}),
                "string, number or boolean",
            ),
            (
                json!({"a": {"settings": "x"}}),
                "settings must be an object",
            ),
        ] {
            let e = Experiment::new(args(&l, &o)).unwrap_err();
            assert_eq!(e.state.code(), "22023");
            assert!(e.message.contains(says), "{} should say {says}", e.message);
        }
    }

    #[test]
    fn bad_numbers_are_22023_with_their_range() {
        let l = two();
        let o = json!({});
        let check = |f: &dyn Fn(&mut Args), says: &str| {
            let mut a = args(&l, &o);
            f(&mut a);
            let e = Experiment::new(a).unwrap_err();
            assert_eq!(e.state.code(), "22023");
            assert!(e.message.contains(says), "{} should say {says}", e.message);
        };
        check(
            &|a| a.repetitions = 0,
            "repetitions must be between 1 and 100",
        );
        check(&|a| a.clients = vec![0], "clients must be at least 1");
        check(&|a| a.clients = vec![], "at least one number of clients");
        check(&|a| a.clients = vec![4, 4], "lists 4 twice");
        check(&|a| a.fillfactors = vec![9], "between 10 and 100");
        check(&|a| a.fillfactors = vec![101], "between 10 and 100");
        check(&|a| a.duration_us = 500_000, "at least 1 s");
        check(&|a| a.duration_us = 7_200_000_000, "3600 s");
        check(&|a| a.warmup_us = 1_500_000, "warmup must be 0");
        check(&|a| a.scale = 0, "scale");
        check(&|a| a.script = "nope".into(), "nope");
        check(&|a| a.name = " ".into(), "name");
        let bad = json!({"order": "random"});
        let e = Experiment::new(args(&l, &bad)).unwrap_err();
        assert!(e.message.contains("alternating"), "{}", e.message);
        let bad = json!({"speed": 1});
        assert!(Experiment::new(args(&l, &bad))
            .unwrap_err()
            .message
            .contains("unknown option"));
    }

    #[test]
    fn fewer_clients_than_jobs_run_one_thread_each() {
        let l = two();
        let o = json!({});
        let mut a = args(&l, &o);
        a.clients = vec![1, 8];
        let e = Experiment::new(a).unwrap();
        assert_eq!(e.run(1, 5).jobs, 1);
        assert_eq!(e.run(8, 5).jobs, 2);
    }

    #[test]
    fn repetitions_alternate_their_order_and_fixed_does_not() {
        let l = json!({"a": {}, "b": {}, "c": {}});
        let o = json!({});
        let mut a = args(&l, &o);
        a.clients = vec![1, 8];
        let e = Experiment::new(a).unwrap();
        let first: Vec<_> = e.cells(1);
        assert_eq!(first, vec![(0, 1), (0, 8), (1, 1), (1, 8), (2, 1), (2, 8)]);
        let mut second = e.cells(2);
        second.reverse();
        assert_eq!(second, first, "repetition 2 runs backwards");
        assert_eq!(e.cells(3), first);
        let fixed = json!({"order": "fixed"});
        let f = Experiment::new(args(&l, &fixed)).unwrap();
        assert_eq!(f.cells(2), f.cells(1));
    }

    #[test]
    fn steps_init_then_size_then_run_per_fillfactor() {
        let l = two();
        let o = json!({});
        let mut a = args(&l, &o);
        a.fillfactors = vec![100, 70];
        a.repetitions = 2;
        let e = Experiment::new(a).unwrap();
        let s = e.steps();
        // per fillfactor: init, 2 sizes, 2 repetitions x 2 cells
        assert_eq!(s.len(), 2 * (1 + 2 + 4));
        assert_eq!(s[0], Step::Init { fillfactor: 100 });
        // the last layout sized is the first one the runs use: no extra move
        assert_eq!(
            s[2],
            Step::Sizes {
                fillfactor: 100,
                layout: 0
            }
        );
        assert_eq!(
            s[3],
            Step::Run {
                fillfactor: 100,
                repetition: 1,
                layout: 0,
                clients: 8
            }
        );
        assert_eq!(s[7], Step::Init { fillfactor: 70 });
        assert_eq!(
            e.describe(s[4], "measured run"),
            "fillfactor 100, repetition 1/2, layout bb, clients 8: measured run"
        );
        // pgbench -i names its fillfactor once; no phase, no colon
        assert_eq!(
            e.describe(s[7], ""),
            "pgbench -i at scale 10 and fillfactor 70"
        );
        assert_eq!(
            e.describe(s[7], "done"),
            "pgbench -i at scale 10 and fillfactor 70: done"
        );
    }

    #[test]
    fn pgoptions_escape_spaces_and_quote_the_temp_tablespace() {
        let p = Placement {
            temp: Some("lab ram".into()),
            settings: vec![("application_name".into(), "a b\\c".into())],
            ..Placement::default()
        };
        assert_eq!(
            pgoptions(&p).unwrap(),
            "-c application_name=a\\ b\\\\c -c temp_tablespaces=\"lab\\ ram\""
        );
        assert_eq!(pgoptions(&Placement::default()), None);
    }

    #[test]
    fn omitted_parts_go_where_the_baseline_puts_them_or_to_the_default() {
        let l = json!([
            {"name": "A", "tables": "disk", "indexes": "disk"},
            {"name": "B", "indexes": "ram"},
            {"name": "C", "tables": "ram", "indexes": "ram"},
            {"name": "none"}
        ]);
        let mut e = Experiment::new(args(&l, &json!({}))).unwrap();
        let filled = e.resolve_omitted_parts("pg_default");
        let at = |i: usize| {
            let p = &e.layouts[i].placement;
            (p.tables.as_deref().unwrap(), p.indexes.as_deref().unwrap())
        };
        assert_eq!(at(0), ("disk", "disk"));
        assert_eq!(
            at(1),
            ("disk", "ram"),
            "B's tables: the baseline's, not C's"
        );
        assert_eq!(at(2), ("ram", "ram"));
        assert_eq!(at(3), ("disk", "disk"));
        assert_eq!(filled.len(), 3);
        assert_eq!(
            filled[0],
            Resolved {
                layout: "B".into(),
                part: "tables",
                tablespace: "disk".into(),
                from: "the baseline's"
            }
        );
        // a baseline that omits a part: the database's default, for every layout
        let l = json!([{"name": "base"}, {"name": "ram", "indexes": "ram"}]);
        let mut e = Experiment::new(args(&l, &json!({}))).unwrap();
        let filled = e.resolve_omitted_parts("pg_default");
        assert_eq!(e.layouts[0].placement.tables.as_deref(), Some("pg_default"));
        assert_eq!(
            e.layouts[0].placement.indexes.as_deref(),
            Some("pg_default")
        );
        assert_eq!(e.layouts[1].placement.tables.as_deref(), Some("pg_default"));
        assert_eq!(e.layouts[1].placement.indexes.as_deref(), Some("ram"));
        assert!(filled
            .iter()
            .all(|r| r.from == "the database's default tablespace"));
        // resolved twice (a stored request read back): nothing more to fill
        assert!(e.resolve_omitted_parts("other").is_empty());
    }

    #[test]
    fn an_omitted_wal_goes_where_the_baseline_puts_it_once_any_layout_places_it() {
        let wal = |e: &Experiment, i: usize| e.layouts[i].placement.wal.clone();
        // no layout names pg_wal: it is not part of the experiment
        let l = json!([{"name": "a", "tables": "x"}, {"name": "b", "tables": "y"}]);
        let mut e = Experiment::new(args(&l, &json!({}))).unwrap();
        assert!(e.resolve_omitted_parts("d").iter().all(|r| r.part != "wal"));
        assert_eq!((wal(&e, 0), wal(&e, 1)), (None, None));
        // the baseline names it: the others that omit it get the baseline's
        let l = json!([{"name": "a", "wal": "r6"}, {"name": "b"}, {"name": "c", "wal": "r1"}]);
        let mut e = Experiment::new(args(&l, &json!({}))).unwrap();
        let filled = e.resolve_omitted_parts("d");
        assert_eq!(wal(&e, 1).as_deref(), Some("r6"));
        assert_eq!(wal(&e, 2).as_deref(), Some("r1"));
        assert!(filled.contains(&Resolved {
            layout: "b".into(),
            part: "wal",
            tablespace: "r6".into(),
            from: "the baseline's"
        }));
        // another layout names it, the baseline does not: where PostgreSQL keeps it
        let l = json!([{"name": "a"}, {"name": "b", "wal": "r1"}]);
        let mut e = Experiment::new(args(&l, &json!({}))).unwrap();
        e.resolve_omitted_parts("d");
        assert_eq!(wal(&e, 0).as_deref(), Some("pg_default"));
    }

    #[test]
    fn control_characters_in_setting_values_are_refused() {
        for v in ["x\t-c\tsynchronous_commit=off", "x\ny", "a\rb", "\u{1b}[0m"] {
            let l = json!({"a": {"settings": {"application_name": v}}});
            let e = Experiment::new(args(&l, &json!({}))).unwrap_err();
            assert_eq!(e.state.code(), "22023", "{v:?}");
            assert!(e.message.contains("control character"), "{}", e.message);
        }
        // spaces and backslashes are fine: escaped for PGOPTIONS
        let l = json!({"a": {"settings": {"application_name": "a b\\c"}}});
        assert!(Experiment::new(args(&l, &json!({}))).is_ok());
    }

    #[test]
    fn pgoptions_escape_every_kind_of_white_space() {
        // a tablespace's name may hold a tab: it stays one word
        let p = Placement {
            temp: Some("a\tb\nc".into()),
            ..Placement::default()
        };
        assert_eq!(
            pgoptions(&p).unwrap(),
            "-c temp_tablespaces=\"a\\\tb\\\nc\""
        );
    }

    #[test]
    fn a_layout_may_name_where_wal_must_be() {
        let l = json!([
            {"name": "wal-raid6", "tables": "r6", "wal": "r6"},
            {"name": "wal-raid1", "tables": "r6", "wal": "r1"},
            {"name": "anywhere", "tables": "r6"}
        ]);
        let o = json!({});
        let mut a = args(&l, &o);
        a.repetitions = 2;
        let e = Experiment::new(a).unwrap();
        assert_eq!(e.layouts[0].placement.wal.as_deref(), Some("r6"));
        assert_eq!(e.layouts[2].placement.wal, None);
        let steps = e.steps();
        let runs: Vec<Step> = steps
            .iter()
            .copied()
            .filter(|s| matches!(s, Step::Run { .. }))
            .collect();
        // the order is the alternating one: runs sharing a WAL place are
        // neighbours, and nothing is reordered for WAL
        let wal: Vec<Option<&str>> = runs.iter().map(|s| e.wal_needed(*s)).collect();
        assert_eq!(
            wal,
            vec![Some("r6"), Some("r1"), None, None, Some("r1"), Some("r6")]
        );
        assert_eq!(
            e.wal_needed(steps[0]),
            None,
            "pgbench -i needs no WAL place"
        );
        assert_eq!(
            e.wal_stop_reason(42, runs[4], "r1", Some("r6"), "/mnt/r6"),
            "pg_wal is on r6's filesystem; the next run (layout \"wal-raid1\", repetition 2) needs it on r1's: \
             move pg_wal while the server is stopped, then storlab.experiment_resume(42)"
        );
        assert!(e
            .wal_stop_reason(42, runs[0], "r6", None, "/srv")
            .starts_with(
                "pg_wal is on the filesystem mounted at /srv, where no tablespace is; the next run"
            ));
        // a layout without it keeps its stored form (args of older experiments read back)
        let back: Experiment = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        assert!(!serde_json::to_string(&e.layouts[2].placement)
            .unwrap()
            .contains("wal"));
        for bad in [json!({"a": {"wal": 3}}), json!({"a": {"wal": ""}})] {
            let err = Experiment::new(args(&bad, &o)).unwrap_err();
            assert_eq!(err.state.code(), "22023");
            assert!(
                err.message.contains("wal must be a tablespace's name"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn experiments_round_trip_through_json() {
        let l = two();
        let o = json!({"order": "fixed", "lock_timeout_ms": 100, "reuse_tables": true});
        let e = Experiment::new(args(&l, &o)).unwrap();
        let back: Experiment = serde_json::from_value(serde_json::to_value(&e).unwrap()).unwrap();
        assert_eq!(back, e);
        assert_eq!(back.lock_timeout_ms, 100);
        assert!(back.reuse_tables);
    }

    #[test]
    fn reuse_tables_is_a_boolean_absent_from_older_experiments() {
        let l = two();
        let e = Experiment::new(args(&l, &json!({}))).unwrap();
        assert!(!e.reuse_tables);
        let err = Experiment::new(args(&l, &json!({"reuse_tables": "yes"}))).unwrap_err();
        assert!(err.to_string().contains("reuse_tables"), "{err}");
        // an experiment stored by 0.6.0 has no such key
        let mut stored = serde_json::to_value(&e).unwrap();
        stored.as_object_mut().unwrap().remove("reuse_tables");
        let back: Experiment = serde_json::from_value(stored).unwrap();
        assert!(!back.reuse_tables);
    }
}
