//! Whether an interceptor acts or only records what it would do: the `mode` of a
//! `[[pipeline]]` entry, shared by the config (which reads it) and the pipeline (which obeys it).

/// `Active` interceptors act; `Audit` ones only record what they would have done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Decisions take effect.
    #[default]
    Active,
    /// Decisions are recorded and nothing changes.
    Audit,
}

impl Mode {
    /// Every mode, in the order messages list them.
    pub const ALL: [Mode; 2] = [Mode::Active, Mode::Audit];

    /// The spelling in config files and descriptors: `active` or `audit`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Active => "active",
            Mode::Audit => "audit",
        }
    }

    /// The mode spelled `text`, if any.
    pub fn from_name(text: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|mode| mode.as_str() == text)
    }
}

#[cfg(test)]
mod tests {
    use super::Mode;

    #[test]
    fn spellings_round_trip() {
        for mode in Mode::ALL {
            assert_eq!(Mode::from_name(mode.as_str()), Some(mode));
        }
        assert_eq!(Mode::from_name("Audit"), None);
        assert_eq!(Mode::default(), Mode::Active);
    }
}
