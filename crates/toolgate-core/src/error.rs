//! Error helpers shared by every crate: a boxed error type for seams, a cause walker, and a
//! printer for whole error chains.

use std::error::Error;
use std::fmt;

/// The error type at crate seams, where many error types meet.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// Finds the first error of type `E` in `error`'s `source()` chain, `error` included.
pub fn cause_ref<'a, E: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a E> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(found) = current.downcast_ref::<E>() {
            return Some(found);
        }
        next = current.source();
    }
    None
}

/// Displays an error followed by each of its causes: `outer: middle: inner`.
pub struct ErrorChain<'a>(pub &'a (dyn Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut next = self.0.source();
        while let Some(cause) = next {
            write!(f, ": {cause}")?;
            next = cause.source();
        }
        Ok(())
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

    #[test]
    fn cause_ref_finds_nested_cause() {
        let error: BoxError = Box::new(Outer(Inner));
        assert!(cause_ref::<Inner>(error.as_ref()).is_some());
        assert!(cause_ref::<Outer>(error.as_ref()).is_some());
        assert!(cause_ref::<std::io::Error>(error.as_ref()).is_none());
    }
}
