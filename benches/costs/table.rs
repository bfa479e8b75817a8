//! The result table: one row per measurement with its median, min, max,
//! target and verdict, plus the header that says when and where it ran.
//!
//! A target is reported, pass or FAIL; a *bar* ([`Row::bar`]) is a target
//! the bench itself fails on: `make bench` exits non-zero with one line
//! per bar missed, naming it and its numbers ([`missed_bars`]). The bars
//! are the budgets that do not move with the machine's load (memory next
//! to curl, the binary's size); wall-time targets on a shared machine stay
//! reported only.

use std::time::{SystemTime, UNIX_EPOCH};

/// How a measurement must compare with its target.
#[derive(Debug, Clone, Copy)]
pub enum Target {
    /// The median must be at most this.
    AtMost(f64),
    /// The median must be at least this.
    AtLeast(f64),
}

/// One measured quantity.
#[derive(Debug)]
pub struct Row {
    name: String,
    unit: &'static str,
    samples: Vec<f64>,
    target: Option<Target>,
    /// Missing the target fails the bench; the text says what was compared.
    bar: Option<String>,
}

impl Row {
    /// A row from its samples (one sample for derived values).
    pub fn new(name: impl Into<String>, unit: &'static str, samples: Vec<f64>) -> Row {
        Row {
            name: name.into(),
            unit,
            samples,
            target: None,
            bar: None,
        }
    }

    /// The row's target as a bar: missing it fails the bench, with
    /// `detail` (the numbers behind the row) in the line that says so.
    pub fn bar(mut self, target: Target, detail: impl Into<String>) -> Row {
        self.target = Some(target);
        self.bar = Some(detail.into());
        self
    }

    /// The row with a target.
    pub fn target(mut self, target: Target) -> Row {
        self.target = Some(target);
        self
    }

    /// The median of the samples.
    pub fn median(&self) -> f64 {
        median(&self.samples)
    }

    /// Whether the row has a target.
    pub fn has_target(&self) -> bool {
        self.target.is_some()
    }

    fn passes(&self) -> Option<bool> {
        let median = self.median();
        self.target.map(|target| match target {
            Target::AtMost(limit) => median <= limit,
            Target::AtLeast(limit) => median >= limit,
        })
    }
}

/// One line per bar missed: its name, its median against the target and
/// the numbers behind it. A bar measured on no sample is missed too.
pub fn missed_bars(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .filter_map(|row| {
            let detail = row.bar.as_ref()?;
            let target = match row.target? {
                Target::AtMost(limit) => format!("at most {}", number(limit)),
                Target::AtLeast(limit) => format!("at least {}", number(limit)),
            };
            (row.passes() != Some(true)).then(|| {
                format!(
                    "costs: bar missed: {}: {} {}, must be {target} ({detail})",
                    row.name,
                    number(row.median()),
                    row.unit
                )
            })
        })
        .collect()
}

/// The median (the mean of the middle two for an even count).
pub fn median(samples: &[f64]) -> f64 {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

fn number(value: f64) -> String {
    if !value.is_finite() {
        return "-".to_owned();
    }
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Prints the table; returns how many rows missed their target.
pub fn print(title: &str, rows: &[Row]) -> usize {
    let name_width = rows.iter().map(|row| row.name.len()).max().unwrap_or(10);
    println!("{title}");
    println!(
        "{:<name_width$}  {:>5}  {:>9}  {:>9}  {:>9}  {:>10}  result",
        "measurement", "runs", "median", "min", "max", "target"
    );
    let mut failed = 0;
    for row in rows {
        let min = row.samples.iter().copied().fold(f64::INFINITY, f64::min);
        let max = row
            .samples
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let target = match row.target {
            Some(Target::AtMost(limit)) => format!("≤ {}", number(limit)),
            Some(Target::AtLeast(limit)) => format!("≥ {}", number(limit)),
            None => String::new(),
        };
        let target = match row.bar {
            Some(_) => format!("{target} bar"),
            None => target,
        };
        let verdict = match row.passes() {
            Some(true) => "pass",
            Some(false) => {
                failed += 1;
                "FAIL"
            }
            None => "",
        };
        let (min, max) = if row.samples.len() > 1 {
            (number(min), number(max))
        } else {
            (String::new(), String::new())
        };
        println!(
            "{:<name_width$}  {:>5}  {:>9}  {:>9}  {:>9}  {:>10}  {}",
            row.name,
            row.samples.len(),
            format!("{} {}", number(row.median()), row.unit),
            min,
            max,
            target,
            verdict
        );
    }
    failed
}

/// Today's date and time in UTC, `YYYY-MM-DD HH:MM UTC`.
pub fn now_utc() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil-from-days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}

/// The CPU model and core count.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, name)| name.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{cpu}, {cores} cores")
}
