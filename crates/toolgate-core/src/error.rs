//! Error helpers shared by every crate: a boxed error type for seams, and a printer for whole
//! error chains.

use std::error::Error;
use std::fmt;

/// The error type at crate seams, where many error types meet.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Displays an error followed by each of its causes: `outer: middle: inner`. A cause whose
/// words the line has already said is left out: some libraries say their cause in their own
/// `Display` too (the redis crate's errors do), and others only the kind of failure
/// (`error connecting to server`), leaving what happened to the cause.
pub struct ErrorChain<'a>(pub &'a (dyn Error + 'a));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = self.0.to_string();
        let mut next = self.0.source();
        while let Some(cause) = next {
            let words = cause.to_string();
            if !said.contains(&words) {
                said.push_str(": ");
                said.push_str(&words);
            }
            next = cause.source();
        }
        f.write_str(&said)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Inner;
    impl fmt::Display for Inner {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("inner")
        }
    }
    impl Error for Inner {}

    #[derive(Debug)]
    struct Outer(Inner);
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("outer")
        }
    }
    impl Error for Outer {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn chain_prints_every_cause_once() {
        assert_eq!(ErrorChain(&Outer(Inner)).to_string(), "outer: inner");
    }

    /// An error that says its cause's words itself.
    #[derive(Debug)]
    struct Saying(Inner);
    impl fmt::Display for Saying {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "failed: {}", self.0)
        }
    }
    impl Error for Saying {
        fn source(&self) -> Option<&(dyn Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_already_said_is_not_said_again() {
        assert_eq!(ErrorChain(&Saying(Inner)).to_string(), "failed: inner");
    }
}
