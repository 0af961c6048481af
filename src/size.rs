//! Sizes as a person writes them, on the command line (`--max-output 64K`)
//! and in the config file (`limits.memory = "8G"`): one reading for both,
//! below the config file and the host's settings alike.

/// Parses a size as a person writes it: bytes, with an optional binary
/// suffix (`64K`, `1M`, `1MiB`, `8G`).
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, suffix) = t.split_at(split);
    let unit: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => 0,
    };
    match digits.parse::<u64>() {
        Ok(n) if unit != 0 && n > 0 => n
            .checked_mul(unit)
            .and_then(|b| usize::try_from(b).ok())
            .ok_or_else(|| format!("invalid size '{text}': too large")),
        _ => Err(format!(
            "invalid size '{text}': expected a number of bytes above 0, optionally with K, M or G (e.g. 1048576 or 1M)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("100"), Ok(100));
        assert_eq!(parse_size("64K"), Ok(65536));
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("2m"), Ok(2 << 20));
        for bad in ["0", "", "1T", "-5", "1.5M", "M"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }
}
