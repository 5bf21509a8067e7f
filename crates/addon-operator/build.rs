//! Build script: sets the git commit and the build date that `addon-operator --version` prints.
//!
//! The commit comes from `ADDON_OPERATOR_GIT_COMMIT` when set (the Dockerfile passes it, the image
//! has no `.git`), else from `git rev-parse --short HEAD`, else `unknown`. The date is
//! `SOURCE_DATE_EPOCH` when set (reproducible builds), else the current time, in UTC.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

fn main() {
    println!("cargo:rerun-if-env-changed=ADDON_OPERATOR_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    for path in git_paths() {
        println!("cargo:rerun-if-changed={path}");
    }
    let commit = std::env::var("ADDON_OPERATOR_GIT_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".to_string());
    println!(
        "cargo:rustc-env=ADDON_OPERATOR_GIT_COMMIT={}",
        commit.trim()
    );
    println!("cargo:rustc-env=ADDON_OPERATOR_BUILD_DATE={}", build_date());
}

/// Runs git in the crate's directory; `None` when git is missing or this is not a checkout.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stdout).ok()?;
    Some(text.trim().to_string()).filter(|t| !t.is_empty())
}

/// `HEAD`, the branch ref it points to and `packed-refs`, so a new commit refreshes the version
/// (paths that do not exist are left out: cargo would rerun the script on every build).
fn git_paths() -> Vec<String> {
    let mut paths = Vec::new();
    for file in ["HEAD", "packed-refs"] {
        if let Some(path) = git(&["rev-parse", "--git-path", file]) {
            paths.push(path);
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"])
        && let Some(reference) = git(&["rev-parse", "--git-path", &branch])
    {
        paths.push(reference);
    }
    paths
        .into_iter()
        .filter(|p| std::path::Path::new(p).exists())
        .collect()
}

fn build_date() -> String {
    let seconds = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        });
    rfc3339(seconds)
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, proleptic Gregorian).
fn rfc3339(seconds: u64) -> String {
    let days = (seconds / 86_400) as i64;
    let rest = seconds % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}
