//! What a server's response headers ask of the client: `Retry-After`, and a pause until a spent
//! rate-limit budget resets.

use std::time::Duration;

use reqwest::header::HeaderMap;

use crate::settings::MAX_BACKOFF;

/// `Retry-After`: seconds, or an HTTP date (how long from now), at most [`MAX_BACKOFF`].
pub(super) fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds).min(MAX_BACKOFF));
    }
    let at = http_date(value)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)).min(MAX_BACKOFF))
}

/// An IMF-fixdate (`Wed, 21 Oct 2015 07:28:00 GMT`, the form HTTP servers send) as seconds
/// since the Unix epoch.
fn http_date(value: &str) -> Option<u64> {
    let mut parts = value.split_whitespace();
    let (_weekday, day, month, year, time, zone) =
        (parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if zone != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| *m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let clock: Vec<i64> = time.split(':').map(|p| p.parse().ok()).collect::<Option<_>>()?;
    let [hours, minutes, seconds] = clock[..] else { return None };
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * m + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hours * 3600 + minutes * 60 + seconds).ok()
}

/// How long an endpoint asks for no request because a rate-limit budget is spent: a
/// `x-ratelimit-remaining-requests` (or `-tokens`) of 0, until its `x-ratelimit-reset-*`.
pub(super) fn rate_limit_pause(headers: &HeaderMap) -> Option<Duration> {
    ["requests", "tokens"]
        .iter()
        .filter(|kind| {
            let remaining = headers.get(format!("x-ratelimit-remaining-{kind}"));
            remaining.and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim() == "0")
        })
        .filter_map(|kind| {
            let reset = headers.get(format!("x-ratelimit-reset-{kind}"))?.to_str().ok()?;
            duration_text(reset).or_else(|| parse_retry_after(reset))
        })
        .max()
        .map(|wait| wait.min(MAX_BACKOFF))
}

/// A duration as rate-limit headers write it: `1s`, `6m0s`, `20ms`, `1h2m3.5s`.
fn duration_text(text: &str) -> Option<Duration> {
    let text = text.trim();
    let mut total = 0.0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit()).unwrap_or(rest.len());
        let seconds = match &rest[..unit_end] {
            "h" => 3600.0,
            "m" => 60.0,
            "s" => 1.0,
            "ms" => 1e-3,
            "us" | "µs" => 1e-6,
            "ns" => 1e-9,
            _ => return None,
        };
        total += number * seconds;
        rest = &rest[unit_end..];
    }
    (!text.is_empty() && total.is_finite()).then(|| Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn rate_limit_headers_say_how_long_to_hold_off() {
        let headers = |pairs: &[(&'static str, &'static str)]| {
            let mut map = HeaderMap::new();
            for (name, value) in pairs {
                map.insert(*name, HeaderValue::from_static(value));
            }
            map
        };
        assert_eq!(rate_limit_pause(&headers(&[("x-ratelimit-remaining-requests", "3")])), None);
        let spent = headers(&[("x-ratelimit-remaining-requests", "0"), ("x-ratelimit-reset-requests", "1.5s")]);
        assert_eq!(rate_limit_pause(&spent), Some(Duration::from_millis(1500)));
        let both = headers(&[
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "20ms"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]);
        assert_eq!(rate_limit_pause(&both), Some(Duration::from_secs(120)), "the longer, at most MAX_BACKOFF");
        assert_eq!(duration_text("1h2m3.5s"), Some(Duration::from_secs_f64(3723.5)));
        assert_eq!(duration_text("3 parsecs"), None);
        assert_eq!(http_date("Wed, 21 Oct 2015 07:28:00 GMT"), Some(1_445_412_480));
        assert_eq!(http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date("21 Oct 2015"), None);
    }

    #[test]
    fn retry_after_is_seconds_or_an_http_date_at_most_max_backoff() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("100000"), Some(MAX_BACKOFF));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO), "a date in the past");
    }
}
