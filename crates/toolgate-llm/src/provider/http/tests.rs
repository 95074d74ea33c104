//! Tests of the HTTP loop.
