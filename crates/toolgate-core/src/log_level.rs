//! The order of MCP's log levels (RFC 5424's, least severe first), for "this level or a more
//! severe one".
#![allow(deprecated)] // logging is deprecated in 2026-07-28 (SEP-2577) but still spoken

use rmcp::model::LoggingLevel;

/// Where `level` stands: `debug` is 0, `emergency` 7.
pub fn severity(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Whether a message at `level` passes a threshold of `at_least`.
pub fn passes(level: LoggingLevel, at_least: LoggingLevel) -> bool {
    severity(level) >= severity(at_least)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_rise_from_debug_to_emergency() {
        let levels = [
            LoggingLevel::Debug,
            LoggingLevel::Info,
            LoggingLevel::Notice,
            LoggingLevel::Warning,
            LoggingLevel::Error,
            LoggingLevel::Critical,
            LoggingLevel::Alert,
            LoggingLevel::Emergency,
        ];
        assert!(levels.windows(2).all(|pair| severity(pair[0]) < severity(pair[1])));
        assert!(passes(LoggingLevel::Error, LoggingLevel::Warning));
        assert!(!passes(LoggingLevel::Info, LoggingLevel::Warning));
    }
}
